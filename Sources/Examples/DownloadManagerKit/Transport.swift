/// A file to download: its name, and its size in bytes.
public struct RemoteFile: Sendable, Hashable, CustomStringConvertible {
  /// The file's name, also the name of its operation in the queue's events.
  public let name: String
  /// Its size in bytes.
  public let size: Int

  /// A file of `size` bytes (at least 1).
  public init(name: String, size: Int) {
    precondition(size > 0, "a remote file has at least one byte")
    self.name = name
    self.size = size
  }

  /// The name.
  public var description: String { name }
}

/// Where transfers come from: the network in an app; a simulated network in the example
/// (``SimulatedNetwork``); a network the tests script chunk by chunk.
public protocol Transport: Sendable {
  /// Opens a connection that sends `file` from byte `offset` on: 0 for a new transfer, the
  /// bytes already received for a resumed one (its "resume data", as an HTTP range request).
  func connect(to file: RemoteFile, from offset: Int) async throws -> any Connection
}

/// One open connection of a ``Transport``.
public protocol Connection: Sendable {
  /// Waits for the next chunk and returns its size: at least 1 byte, at most `limit`. Throws
  /// `CancellationError` if the calling task is cancelled while it waits.
  func receive(upTo limit: Int) async throws -> Int

  /// Closes the connection; closing it again does nothing.
  func close() async
}

/// The host answered "429 Too Many Requests": nothing more should reach it for `retryAfter`
/// (its Retry-After header). ``Transport/connect(to:from:)`` throws it.
public struct ServerBusy: Error, Sendable, CustomStringConvertible {
  /// How long the host asks to be left alone.
  public let retryAfter: Duration

  /// The host asks for nothing during `retryAfter`.
  public init(retryAfter: Duration) { self.retryAfter = retryAfter }

  /// `429 Too Many Requests, Retry-After 0.3 seconds`.
  public var description: String { "429 Too Many Requests, Retry-After \(retryAfter)" }
}
