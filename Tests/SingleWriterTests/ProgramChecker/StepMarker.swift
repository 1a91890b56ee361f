import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The current thread's `StepMark`, in a thread-local (not a task-local: the check is about
/// what a thread does on behalf of the call it is in).
enum StepMarker {
  private static let key: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
  }()

  static var current: StepMark? {
    get {
      pthread_getspecific(key).map { Unmanaged<StepMark>.fromOpaque($0).takeUnretainedValue() }
    }
    set {
      let old = pthread_getspecific(key)
      pthread_setspecific(key, newValue.map { Unmanaged.passRetained($0).toOpaque() })
      if let old { Unmanaged<StepMark>.fromOpaque(old).release() }
    }
  }

  /// An id for the current thread.
  static var thread: UInt {
    #if canImport(Darwin)
      UInt(bitPattern: pthread_self())
    #else
      UInt(pthread_self())
    #endif
  }

  static var now: UInt64 { DispatchTime.now().uptimeNanoseconds }

  /// The CPU time the current thread has used, in nanoseconds: unlike `now`, it does not
  /// move while the thread is preempted, so a loaded machine cannot stretch it.
  static var cpuNow: UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
  }
}
