import Foundation
import Observation
import Testing

@testable import SingleWriter

// "Once per checkout" against observation that begins while a checkout is held:
// `WriterWord.observe()` marks a held checkout `dirty`, since it may have written
// already, unseen, so its end is heard once, even if it only read; a proxy's checkout
// that only read after observation began is not heard; a closure write always is.

@Suite(.serialized) struct AttackPassObservedCheckouts {
  /// A proxy is checked out and only reads; meanwhile the container's first tracked read
  /// registers an observer. The checkout then ends: it may have written before the
  /// observer came, so the observer hears of it, once.
  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @Test func aCheckoutHeldWhenTrackingBeganIsHeardOnceAtItsEnd() {
    let box = ThreadSafeSingleWriter(value: 7)
    let fired = Counter()
    do {
      let proxy = box.writer!
      _ = proxy.write  // a read through the proxy: `_read`, no write access
      trackForever(fired) { _ = box.trackedRead }  // the first tracked read, mid-checkout
      _ = proxy.write
      withExtendedLifetime(proxy) {}
    }  // the read-only checkout ends
    #expect(
      fired.load() == 1,
      "a checkout held when tracking began was heard \(fired.load()) time(s) (value \(box.read))")
  }

  /// The same with the checkout of a proxy that a `writeNext` body on another thread
  /// kept, held while tracking begins: the observer hears of it once it ends.
  @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
  @Test func aKeptProxyHeldWhenTrackingBeganIsHeardOnceAtItsEnd() {
    let box = ThreadSafeSingleWriter(value: 7)
    let fired = Counter()
    let kept = Locked<ThreadSafeWriterProxy<Int>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      box.writeNext { proxy in
        _ = proxy.write
        kept.withLock { $0 = proxy }
      }
      done.signal()
    }
    done.wait()
    trackForever(fired) { _ = box.trackedRead }
    kept.withLock { $0 = nil }  // ends the checkout, which only read
    #expect(
      fired.load() == 1, "a kept proxy held when tracking began was heard \(fired.load()) time(s)")
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
