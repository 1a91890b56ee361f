import Dispatch
import SingleWriterCompanions

/// The article's user example: `updateUser` holds the lock and calls `incrementAge`,
/// which takes the same lock again. A serial queue used as a lock would deadlock here.
func reentrantMutexWalkthrough() {
  struct User {
    var age: Int
    var log: [String] = []
  }

  // The lock guards code, so the state sits next to it; touch it only inside `with`.
  final class Profile: @unchecked Sendable {
    let lock = ReentrantMutex()
    var user = User(age: 24)

    func incrementAge() {
      lock.with {
        user.age += 1
        user.log.append("incrementAge")
      }
    }

    func updateUser() {
      lock.with {
        user.log.append("updateUser")
        incrementAge()  // takes `lock` again on the same thread: no deadlock
      }
    }
  }

  let profile = Profile()
  profile.updateUser()
  print("after updateUser: age \(profile.lock.with { profile.user.age })")  // 25
  print("calls: \(profile.lock.with { profile.user.log })")

  // Nesting three deep, as in the article, is fine too.
  let depth = profile.lock.with { profile.lock.with { profile.lock.with { 3 } } }
  print("nested \(depth) deep and came back")

  // Other threads wait for the outermost `with`, so no update is lost.
  DispatchQueue.concurrentPerform(iterations: 100) { _ in profile.updateUser() }
  print("after 100 concurrent updateUser calls: age \(profile.lock.with { profile.user.age })")

  // A throwing body releases the lock on its way out.
  struct Invalid: Error {}
  do {
    try profile.lock.with {
      try profile.lock.with { throw Invalid() }
    }
  } catch {
    print("caught \(error); the lock is free again")
  }
  let reached = DispatchSemaphore(value: 0)
  DispatchQueue.global().async {
    profile.lock.with { print("another thread got the lock: age \(profile.user.age)") }
    reached.signal()
  }
  reached.wait()
}
