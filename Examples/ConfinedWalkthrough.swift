import Dispatch
import SingleWriterCompanions

/// The article's demo app without UIKit: a model, a controller and a view, each
/// confined to its own queue, telling each other what happened instead of asking.
func confinedWalkthrough() {
  // Every line below is printed by whichever object handles the message. One input
  // travels controller -> model -> controller -> view, and the walkthrough waits
  // until the view has shown it, so the transcript is always the same.
  let shown = DispatchSemaphore(value: 0)

  // In an app the view would use `queue: .main`. Here the main thread is busy running
  // this walkthrough (and waits on `shown`), and a command-line tool only services
  // the main queue from dispatchMain() or a run loop, so `.main` would never run the
  // view. A serial queue of our own plays the part.
  let ui = DispatchQueue(label: "ui, standing in for the main queue")
  let view = Confined(PayView(shown: shown), queue: ui)
  view.tell { [weak view] in $0.home = view }
  let model = Confined(PayModel())
  let controller = Confined(PayController(model: model, view: view))
  model.tell { [weak controller] in $0.controller = controller }

  print("model runs on      \(model.queue.label)")
  print("controller runs on \(controller.queue.label)")
  print("view runs on       \(view.queue.label)")

  for input in ["50000", "fifty", "64000"] {
    print("user types \"\(input)\"")
    controller.tell { $0.userEntered(input) }
    shown.wait()
  }

  // `ask` is for the edges of the system: it suspends a task, never a thread.
  let answered = DispatchSemaphore(value: 0)
  Task {
    let history = await model.ask { $0.history }
    print("asked the model for its history: \(history)")
    answered.signal()
  }
  answered.wait()
}

/// Owns the numbers. Tells its controller when they change; never returns them.
private final class PayModel {
  weak var controller: Confined<PayController>?
  var history: [Int] = []

  func setSalary(_ salary: Int) {
    history.append(salary)
    let tax = salary / 5
    print("  model:      salary \(salary), tax \(tax)")
    controller?.tell { $0.modelChanged(salary: salary, tax: tax) }
  }
}

/// Turns what the user did into messages for the model, and model changes into
/// messages for the view.
private final class PayController {
  let model: Confined<PayModel>
  let view: Confined<PayView>

  init(model: Confined<PayModel>, view: Confined<PayView>) {
    self.model = model
    self.view = view
  }

  func userEntered(_ text: String) {
    guard let salary = Int(text) else {
      print("  controller: \"\(text)\" is not a number")
      view.tell { $0.show("please enter a number") }
      return
    }
    print("  controller: tells the model the salary is \(salary)")
    model.tell { $0.setSalary(salary) }
  }

  func modelChanged(salary: Int, tax: Int) {
    print("  controller: tells the view to show the new figures")
    view.tell { $0.show("salary \(salary), tax \(tax), net \(salary - tax)") }
  }
}

/// Shows text. Runs on the UI queue, like a view on the main queue.
private final class PayView {
  weak var home: Confined<PayView>?
  let shown: DispatchSemaphore

  init(shown: DispatchSemaphore) { self.shown = shown }

  func show(_ text: String) {
    home?.assertOnQueue()  // a debug build stops here if called from anywhere else
    print("  view:       shows \"\(text)\"")
    shown.signal()
  }
}
