import SingleWriterAtomics

/// A task executor whose jobs run on one of a schedule's threads, so that the scheduler
/// interleaves tasks with threads: a task made with `Task(executorPreference:)` starts,
/// and resumes after each suspension, by a job enqueued here, and `run(until:)` runs the
/// jobs one at a time on the thread that calls it, sleeping on a C-layer word (which the
/// scheduler sees) while there are none. What Swift's runtime does inside a job (a task's
/// suspension, a continuation's resumption) is no scheduling point; every wait and wake
/// of the container's is.
///
/// Every task of a schedule runs on that one thread, so a task never runs while another
/// thread is inside the runtime on its behalf (cancelling it, say): the runtime's own
/// locks, which the scheduler cannot see, are never contended.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
final class ScheduleExecutor: TaskExecutor, @unchecked Sendable {
  // Sendable: `jobs` is touched only under `mutex`, a C-layer mutex; the words are atomics.
  // Never freed, as the words of a failed schedule's threads are never.
  private let mutex = UnsafeMutablePointer<sw_mutex>.allocate(capacity: 1)
  /// Bumped by each enqueue: the runner sleeps on it.
  private let enqueued = UnsafeMutablePointer<sw_atomic_u32>.allocate(capacity: 1)
  private var jobs: [UnownedJob] = []

  init() {
    mutex.initialize(to: sw_mutex())
    enqueued.initialize(to: sw_atomic_u32())
    sw_sched_name_word(enqueued, "the executor's queue")
  }

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    sw_mutex_lock(mutex)
    jobs.append(job)
    sw_mutex_unlock(mutex)
    sw_fetch_add(enqueued, 1)
    sw_wake_all(enqueued)
  }

  /// Runs the jobs enqueued here, in order, on the calling thread, until `done()` after a
  /// job; sleeps while there are none. A job that never comes is a deadlock.
  func run(until done: () -> Bool) {
    while !done() {
      let seen = sw_load_acquire(enqueued)
      sw_mutex_lock(mutex)
      let job = jobs.isEmpty ? nil : jobs.removeFirst()
      sw_mutex_unlock(mutex)
      if let job {
        job.runSynchronously(on: asUnownedTaskExecutor())
      } else {
        sw_wait(enqueued, seen)
      }
    }
  }
}
