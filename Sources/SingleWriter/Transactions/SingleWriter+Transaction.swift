extension SingleWriter {
  /// Runs `body` on a copy of the value if the writer is free and no write is queued, then
  /// publishes what it wrote all at once; returns `nil`, running nothing, if not.
  ///
  /// ```swift
  /// guard let saved = try form.transaction({ form in
  ///   form.name = name
  ///   try form.validate()  // throws: the name change is never seen
  /// }) else { return }  // nil: someone holds the writer
  /// ```
  ///
  /// Until `body` returns, ``read``, `trackedRead`, observers and `changes()` see the value
  /// from before, a read of this container inside `body` included. When `body` returns,
  /// everything it wrote becomes the value at once, with one observer notification;
  /// when it throws, nothing it wrote is ever seen, and the error propagates. While
  /// `body` runs it holds the writer: ``writer`` and `tryWrite` find it busy, and a
  /// ``writeNext(fileID:function:line:_:)`` from `body` runs after the commit and sees it.
  ///
  /// `body` works on a copy: for copy-on-write storage, its first write to each buffer
  /// copies that buffer. The commit moves the copy in. The value it replaces, like a
  /// throwing body's copy, is freed once the writer is free again, so a `deinit` there
  /// may write to this container.
  ///
  /// Unlike `tryWrite`, the result is not discardable: `nil` means the transaction did not
  /// run. The defaulted `fileID`, `function` and `line` name the caller in debug builds'
  /// race reports.
  @inlinable
  public func transaction<R, E: Error>(
    fileID: StaticString = #fileID, function: StaticString = #function, line: UInt = #line,
    _ body: (inout Value) throws(E) -> R
  ) throws(E) -> R? {
    guard tryCheckout(file: fileID, function: function, line: line) else { return nil }
    // Declared before the `defer`, so freed after it, with the checkout ended: the value
    // from before the commit, or a throwing body's copy. A `deinit` there may write to
    // this container, as after any write that replaced a value.
    var draft: Value
    defer {
      endCheckout()
      _fixLifetime(self)  // the copy and the commit go through `storage`
    }
    draft = storage.pointee
    let result = try body(&draft)
    swap(&storage.pointee, &draft)
    isDirty = true
    return result
  }
}
