import Dispatch
import SingleWriter

/// A plain SingleWriter shared with a second thread by mistake, and RaceDetector
/// catching it the moment the two accesses overlap.
func raceDetectorWalkthrough() {
  #if DEBUG
    // Collect reports instead of stopping, which is what the default handler does.
    let caught = DispatchSemaphore(value: 0)
    let previous = RaceDetector.onRace
    RaceDetector.onRace = { report in
      print("caught: \(report)")
      caught.signal()
    }
    defer { RaceDetector.onRace = previous }

    // Named sections: this thread is writing "inventory"...
    let inside = DispatchSemaphore(value: 0)
    let done = DispatchSemaphore(value: 0)
    RaceDetector.begin(.write, "inventory")
    // ...when another thread starts reading it. Semaphores make them overlap.
    DispatchQueue.global().async {
      RaceDetector.withAccess(.read, "inventory") { inside.signal() }
      done.signal()
    }
    inside.wait()
    caught.wait()
    done.wait()
    RaceDetector.end(.write, "inventory")

    // SingleWriter marks its own accesses: holding the writer here while another
    // thread reads is reported, with advice. (Never do this: share a
    // ThreadSafeSingleWriter instead.)
    let stock = SingleWriter(value: ["apples": 3])
    do {
      let held = stock.writer
      nonisolated(unsafe) let shared = stock  // smuggled across threads on purpose
      DispatchQueue.global().async {
        print("the other thread read \(shared.read)")
        done.signal()
      }
      done.wait()
      caught.wait()
      withExtendedLifetime(held) {}
    }  // released here

    // Back to one thread at a time: nothing to report.
    stock.writeNext { $0.write["pears"] = 1 }
    print("stock on this thread: \(stock.read.sorted { $0.key < $1.key })")
  #else
    print("release build: RaceDetector is compiled out and reports nothing")
  #endif
}
