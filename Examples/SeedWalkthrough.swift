import SingleWriter

/// The article's playground, line for line, plus an if-let checkout.
func seedWalkthrough() {
  struct User {
    var name: String
    var id: Int
  }

  // Wrap a User so that only one place at a time can write it.
  let currentUser = SingleWriter(value: User(name: "Default", id: 0))
  print(currentUser.read.name)  // Default

  // Hold the writer: nobody else gets one until this reference is released.
  var writerReference = currentUser.writer
  writerReference?.write.name = "Joe"

  // A second checkout finds the writer taken, gets nil, and changes nothing.
  currentUser.writer?.write.name = "Sally"
  print(currentUser.read.name)  // Joe

  // Queue a write for when the writer is next free.
  currentUser.writeNext { $0.write.name = "Bobo" }
  print(currentUser.read.name)  // Joe: still held

  // Releasing the held writer runs the queued write at once.
  writerReference = nil
  print(currentUser.read.name)  // Bobo

  // The writer is free again.
  currentUser.writer?.write.name = "Sally"
  currentUser.writer?.write.id = 10
  print(currentUser.read)  // User(name: "Sally", id: 10)

  // Check out with if-let, and do something else when someone is writing.
  if let writer = currentUser.writer {
    writer.write.id += 1
    print("checked out, id is now \(currentUser.read.id)")  // 11
  } else {
    print("someone else is writing")
  }
}
