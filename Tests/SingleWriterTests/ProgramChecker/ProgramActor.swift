/// The actor that the `Task on an actor` roots run on.
actor ProgramActor {
  func run(_ interpreter: ProgramInterpreter, _ steps: [ProgramStep]) async {
    await interpreter.runRoot(steps)
  }
}
