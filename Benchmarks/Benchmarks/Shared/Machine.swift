import Foundation

/// What the tools say about the machine beside their figures: on a shared machine, the
/// load around a run decides how far its figures can be trusted.
public enum Machine {
  /// The cores the process may run on.
  public static var cores: Int { ProcessInfo.processInfo.activeProcessorCount }

  /// The 1-, 5- and 15-minute load averages, or "?" where unavailable.
  public static var loadAverage: String {
    var loads = [Double](repeating: 0, count: 3)
    guard getloadavg(&loads, 3) == 3 else { return "?" }
    return loads.map { String(format: "%.2f", $0) }.joined(separator: " ")
  }
}
