/// A markdown table, the form every tool prints its results in (and README.md quotes).
public struct MarkdownTable {
  /// The column titles.
  public var header: [String]
  /// One of `---`, `---:`, `:---:` per column.
  public var alignments: [String]
  /// The cells, row by row.
  public var rows: [[String]]

  /// A table with these columns and rows.
  public init(_ header: [String], _ alignments: [String], _ rows: [[String]] = []) {
    self.header = header
    self.alignments = alignments
    self.rows = rows
  }

  /// The table's lines, with a newline after each.
  public var text: String {
    ([header, alignments] + rows).map { "| " + $0.joined(separator: " | ") + " |\n" }.joined()
  }

  /// Prints the table.
  public func print() {
    Swift.print(text, terminator: "")
  }
}
