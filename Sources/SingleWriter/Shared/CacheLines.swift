import SingleWriterAtomics

extension UnsafeMutablePointer where Pointee: ~Copyable {
  /// Memory for one `Pointee`, initialized to `value`, on cache lines that no other
  /// allocation shares. The inbox, the queue being run and the value are written by
  /// different threads; small allocations placed side by side by `malloc` would share a
  /// line, and each write would evict the others' copies. Free it with `deallocate()`.
  @inlinable
  static func allocateOnOwnCacheLines(_ value: consuming Pointee) -> Self {
    let line = Int(SW_CACHE_LINE)
    let size = (MemoryLayout<Pointee>.size + line - 1) / line * line
    let raw = UnsafeMutableRawPointer.allocate(
      byteCount: max(size, line), alignment: max(line, MemoryLayout<Pointee>.alignment))
    let pointer = raw.bindMemory(to: Pointee.self, capacity: 1)
    pointer.initialize(to: value)
    return pointer
  }
}
