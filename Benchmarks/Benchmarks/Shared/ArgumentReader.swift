import Foundation

/// Reads a tool's command line flag by flag, and stops with its usage text on `-h` or on a
/// bad argument: the tools parse their few options by hand, alike, through this.
public struct ArgumentReader {
  /// The tool's name, before each problem it reports.
  public let tool: String
  /// The usage text, printed with `-h` and after a problem.
  public let usage: String
  private var remaining: ArraySlice<String>

  /// A reader of `arguments` (the process's, without its name, by default).
  public init(
    tool: String, usage: String, arguments: [String] = Array(CommandLine.arguments.dropFirst())
  ) {
    self.tool = tool
    self.usage = usage
    remaining = arguments[...]
  }

  /// The next flag; on `-h` or `--help`, prints the usage and exits 0.
  public mutating func next() -> String? {
    guard let argument = remaining.popFirst() else { return nil }
    if argument == "-h" || argument == "--help" { fail(nil) }
    return argument
  }

  /// The value after `flag`; stops the tool if there is none.
  public mutating func value(of flag: String) -> String {
    guard let value = remaining.popFirst() else { fail("\(flag) needs a value") }
    return value
  }

  /// The comma-separated list after `flag`, each item through `parse` (items it rejects
  /// are left out, so a wrong list comes out empty or short and fails validation).
  public mutating func list<T>(of flag: String, _ parse: (Substring) -> T?) -> [T] {
    value(of: flag).split(separator: ",").compactMap(parse)
  }

  /// Prints `problem` (if any) to standard error and the usage, then exits: 0 without a
  /// problem, 2 with one.
  public func fail(_ problem: String?) -> Never {
    if let problem { FileHandle.standardError.write(Data("\(tool): \(problem)\n".utf8)) }
    print(usage)
    exit(problem == nil ? 0 : 2)
  }
}
