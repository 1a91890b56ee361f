import Dispatch
import Foundation
import SingleWriter
import SingleWriterCompanions
import Testing

/// Shared state that is deliberately not thread-safe: only the mutex protects it, so a
/// missing exclusion shows up as a wrong count or a ThreadSanitizer report.
private final class Unprotected: @unchecked Sendable {
  var count = 0
  var log: [String] = []
}

private struct Failure: Error, Equatable {}

/// Compiles only if `with` can be called the way `rethrows` callers call it.
private func rethrowing(_ mutex: ReentrantMutex, _ body: () throws -> Int) rethrows -> Int {
  try mutex.with(body)
}

private struct Token: ~Copyable {
  let value: Int
}

@Suite struct ReentrantMutexTests {
  @Test func returnsTheBodysResult() {
    let mutex = ReentrantMutex()
    #expect(mutex.with { 42 } == 42)
    #expect(rethrowing(mutex) { 7 } == 7)
    let token = mutex.with { Token(value: 3) }
    #expect(token.value == 3)
  }

  @Test func nestedWithOnOneThreadDoesNotDeadlock() {
    let mutex = ReentrantMutex()
    let depth = mutex.with {
      mutex.with {
        mutex.with { 3 }
      }
    }
    #expect(depth == 3)
  }

  @Test func deepRecursionThroughWith() {
    let mutex = ReentrantMutex()
    func descend(_ n: Int) -> Int {
      mutex.with { n == 0 ? 0 : 1 + descend(n - 1) }
    }
    #expect(descend(1_000) == 1_000)
  }

  @Test func theArticlesUpdateUserCallsIncrementAge() {
    let mutex = ReentrantMutex()
    let user = Unprotected()
    func incrementAge() { mutex.with { user.count += 1 } }
    func updateUser() {
      mutex.with {
        user.log.append("update")
        incrementAge()
      }
    }
    updateUser()
    incrementAge()
    #expect(user.count == 2)
    #expect(user.log == ["update"])
  }

  @Test func errorsPropagateWithTheirType() {
    let mutex = ReentrantMutex()
    #expect(throws: Failure.self) {
      try mutex.with { () throws(Failure) -> Void in throw Failure() }
    }
    #expect(throws: Failure.self) {
      try rethrowing(mutex) { throw Failure() }
    }
  }

  @Test func aThrowingBodyReleasesTheLock() {
    let mutex = ReentrantMutex()
    #expect(throws: Failure.self) {
      try mutex.with { try mutex.with { throw Failure() } }
    }
    // Another thread can take the lock again. If it leaked, the thread would block;
    // the timeout keeps that from hanging the suite.
    let acquired = DispatchSemaphore(value: 0)
    Thread { mutex.with { _ = acquired.signal() } }.start()
    #expect(acquired.wait(timeout: .now() + 60) == .success)
  }

  @Test func anInnerThrowLeavesTheOuterHoldingTheLock() {
    let mutex = ReentrantMutex()
    let state = Unprotected()
    let entered = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    mutex.with {
      _ = try? mutex.with { throw Failure() }
      // Still held: another thread that tries now gets in only after the outer returns.
      Thread {
        entered.signal()
        mutex.with { state.log.append("other") }
        finished.signal()
      }.start()
      entered.wait()
      usleep(20_000)  // widens the window for a broken lock; correctness needs no sleep
      state.log.append("outer")
    }
    finished.wait()
    #expect(state.log == ["outer", "other"])
  }

  @Test func otherThreadsWaitForTheOutermostWith() {
    let mutex = ReentrantMutex()
    let state = Unprotected()
    let holding = DispatchSemaphore(value: 0)
    let trying = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    Thread {
      trying.signal()
      holding.wait()
      mutex.with { state.log.append("other") }
      finished.signal()
    }.start()
    trying.wait()
    mutex.with {
      mutex.with {
        state.log.append("inner")
        holding.signal()
        usleep(20_000)  // widens the window for a broken lock; correctness needs no sleep
      }
      // The inner `with` has returned; the outer still holds the lock.
      usleep(20_000)
      state.log.append("outer")
    }
    finished.wait()
    #expect(state.log == ["inner", "outer", "other"])
  }

  @Test func excludesOtherThreads() async {
    let mutex = ReentrantMutex()
    let counter = Unprotected()
    let threads = 4
    let increments = 5_000
    // Yielding between the read and the write invites another thread in, so a lock
    // that let two in would lose increments even on a busy machine.
    @Sendable func increment() {
      let count = counter.count
      sched_yield()
      counter.count = count + 1
    }
    await onThreads(threads) { index in
      for _ in 0..<increments {
        if index.isMultiple(of: 2) {
          mutex.with { increment() }
        } else {
          mutex.with { mutex.with { increment() } }
        }
      }
    }
    #expect(mutex.with { counter.count } == threads * increments)
  }

  @Test func mutexesAreIndependent() {
    let first = ReentrantMutex()
    let second = ReentrantMutex()
    let result = first.with {
      second.with { first.with { second.with { "both" } } }
    }
    #expect(result == "both")

    // A thread holding `first` does not keep another thread out of `second`.
    let acquired = DispatchSemaphore(value: 0)
    first.with {
      Thread { second.with { _ = acquired.signal() } }.start()
      #expect(acquired.wait(timeout: .now() + 60) == .success)
    }
  }
}
