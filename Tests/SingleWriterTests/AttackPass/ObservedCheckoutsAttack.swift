import Foundation
import Observation
import Testing

@testable import SingleWriter

// "Once per checkout that wrote, never for a proxy's checkout that only read", against
// observation that begins while a checkout is held: every access through a proxy marks
// its checkout as it begins, observed or not, so a checkout held when tracking began is
// heard at its end if it wrote, before or after, and not if it only read; a closure
// write always is.

@Suite(.serialized) struct AttackPassObservedCheckouts {
  /// A proxy is checked out; meanwhile the container's first tracked read registers an
  /// observer. The checkout then ends: heard once if it wrote before the observer came,
  /// not at all if it only read.
  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @Test(arguments: [false, true])
  func aCheckoutHeldWhenTrackingBeganIsHeardAtItsEndOnlyIfItWrote(wrote: Bool) {
    let box = ThreadSafeSingleWriter(value: 7)
    let fired = Counter()
    do {
      let proxy = box.writer!
      if wrote { proxy.write = 8 } else { _ = proxy.write }  // `_read`: no write access
      trackForever(fired) { _ = box.trackedRead }  // the first tracked read, mid-checkout
      _ = proxy.write
      withExtendedLifetime(proxy) {}
    }  // the checkout ends
    #expect(
      fired.load() == (wrote ? 1 : 0),
      "a checkout held when tracking began (wrote: \(wrote)) was heard \(fired.load()) time(s)")
  }

  /// The same with the checkout of a proxy that a `writeNext` body on another thread
  /// kept, held while tracking begins.
  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @Test(arguments: [false, true])
  func aKeptProxyHeldWhenTrackingBeganIsHeardAtItsEndOnlyIfItWrote(wrote: Bool) {
    let box = ThreadSafeSingleWriter(value: 7)
    let fired = Counter()
    let kept = Locked<ThreadSafeWriterProxy<Int>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      box.writeNext { proxy in
        if wrote { proxy.write = 8 } else { _ = proxy.write }
        kept.withLock { $0 = proxy }
      }
      done.signal()
    }
    done.wait()
    trackForever(fired) { _ = box.trackedRead }
    kept.withLock { $0 = nil }  // ends the checkout
    #expect(
      fired.load() == (wrote ? 1 : 0),
      "a kept proxy held when tracking began (wrote: \(wrote)) was heard \(fired.load()) time(s)")
  }

  /// The control: tracking that began before the read-only checkout is not told of it.
  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @Test func aCheckoutThatOnlyReadIsNotHeardWhenTrackingBeganBefore() {
    let box = ThreadSafeSingleWriter(value: 7)
    let fired = Counter()
    trackForever(fired) { _ = box.trackedRead }
    do {
      let proxy = box.writer!
      _ = proxy.write
      withExtendedLifetime(proxy) {}
    }
    #expect(fired.load() == 0)
  }

  /// A closure write counts as writing, whatever its body does: heard once.
  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @Test func aWithWriterIsHeardOnceEvenIfItOnlyRead() {
    let box = ThreadSafeSingleWriter(value: 7)
    let fired = Counter()
    trackForever(fired) { _ = box.trackedRead }
    let seen = box.withWriter { value in value }
    #expect(fired.load() == 1, "withWriter that only read \(seen) was heard \(fired.load())")
  }
}
