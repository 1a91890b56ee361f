import Foundation
import SingleWriter

/// A transaction's body throws this to abandon its draft.
struct AbandonedTransaction: Error {}

/// Transactions: the body writes the marker into its draft first, reads x (which must show
/// the value from before), pauses, then either takes the marker back and commits, or
/// throws. Only a commit counts as an issued write.
extension ProgramInterpreter {
  func transaction(_ x: ContainerName, _ form: TransactionForm, origin: UInt) {
    let run = run
    do throws(AbandonedTransaction) {
      try run.box(x).transaction { (draft: inout CheckedPair) throws(AbandonedTransaction) in
        run.bodyBegan(x, origin: origin)
        Self.markDraft(run, x, &draft, form)
        if form.pause > 0 { usleep(UInt32(form.pause * 1_000)) }
        try Self.finishDraft(x, &draft, form)
      }
      run.count(x)
    } catch {}
  }

  func transaction(
    _ x: ContainerName, _ form: TransactionForm, isolation: isolated (any Actor)? = #isolation
  ) async {
    let run = run
    let origin = StepMarker.thread
    do {
      try await run.box(x).transaction { (draft: inout CheckedPair) in
        run.bodyBegan(x, origin: origin)
        Self.markDraft(run, x, &draft, form)
        if form.pause > 0 { try? await Task.sleep(nanoseconds: UInt64(form.pause) * 1_000_000) }
        // Resumed perhaps on another thread: the draft must still be this body's own.
        if form.readsInside { run.checkPublished(x, run.box(x).read, "a read inside its body") }
        try Self.finishDraft(x, &draft, form)
      }
      run.count(x)
    } catch {}
  }

  static func markDraft(
    _ run: ProgramRun, _ x: ContainerName, _ draft: inout CheckedPair, _ form: TransactionForm
  ) {
    run.checkPublished(x, draft, "a transaction's fresh draft")
    draft.a += TransactionForm.marker
    draft.b += TransactionForm.marker
    if form.readsInside {
      run.checkPublished(x, run.box(x).read, "a read inside a transaction's body")
    }
  }

  static func finishDraft(
    _ x: ContainerName, _ draft: inout CheckedPair, _ form: TransactionForm
  ) throws(AbandonedTransaction) {
    if form.throwing { throw AbandonedTransaction() }
    draft.a -= TransactionForm.marker - 1
    draft.b -= TransactionForm.marker - 1
  }
}
