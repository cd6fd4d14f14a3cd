/// A download added to a ``DownloadManager``.
public struct Download: Sendable, Hashable, CustomStringConvertible {
  /// Its number in its manager, from 0, in the order downloads were added.
  public let id: Int
  /// The file it downloads.
  public let file: RemoteFile

  /// The file's name.
  public var description: String { file.name }
}

/// Where a download is, as a download screen shows it.
public enum DownloadPhase: Sendable, Hashable, CustomStringConvertible {
  /// Not started yet, or resumed and waiting for a free slot.
  case waiting
  /// Holding a slot and receiving chunks.
  case transferring
  /// Paused by the user while it transfers: it pauses at its next chunk boundary (its
  /// checkpoint), and holds its slot until then.
  case pausing
  /// Paused by the user: it holds no slot (and no connection) until resumed.
  case paused
  /// Paused because the limit was lowered below the number transferring: it holds no slot, and
  /// continues by itself as soon as one is free (before the downloads that never started).
  case pausedForLimit
  /// All its bytes arrived.
  case finished
  /// The transfer failed.
  case failed
  /// Cancelled.
  case cancelled

  /// Finished, failed or cancelled.
  public var isTerminal: Bool {
    switch self {
    case .finished, .failed, .cancelled: true
    case .waiting, .transferring, .pausing, .paused, .pausedForLimit: false
    }
  }

  /// A short word for tables.
  public var description: String {
    switch self {
    case .waiting: "waiting"
    case .transferring: "transferring"
    case .pausing: "pausing"
    case .paused: "paused"
    case .pausedForLimit: "paused (limit)"
    case .finished: "finished"
    case .failed: "failed"
    case .cancelled: "cancelled"
    }
  }
}

/// One download in a ``DownloadManager/Snapshot``.
public struct DownloadStatus: Sendable, Hashable {
  /// The download.
  public let download: Download
  /// Where it is.
  public let phase: DownloadPhase
  /// The bytes received so far: what a resumed transfer asks for the rest from.
  public let bytesReceived: Int
  /// Whether it has a connection open now (a paused download has none).
  public let isConnected: Bool
}

extension DownloadManager {
  /// The manager as its events have told it so far, in order: what a download screen shows.
  public struct Snapshot: Sendable {
    /// The limit, as of the latest event.
    public let maxConcurrentTransfers: Int
    /// The queue's executing operations as of the latest event: the downloads transferring, and
    /// those asked to pause that have not reached a chunk boundary yet.
    public let executingCount: Int
    /// Every download, in the order they were added.
    public let downloads: [DownloadStatus]

    /// The status of `download`.
    public subscript(_ download: Download) -> DownloadStatus { downloads[download.id] }

    /// The status of the download of the file named `name`; `nil` if there is none.
    public subscript(_ name: String) -> DownloadStatus? { downloads.first { $0.download.file.name == name } }

    /// How many downloads are in `phase`.
    public func count(_ phase: DownloadPhase) -> Int { downloads.lazy.filter { $0.phase == phase }.count }

    /// The downloads in `phase`, in the order they were added.
    public func names(_ phase: DownloadPhase) -> [String] {
      downloads.filter { $0.phase == phase }.map(\.download.file.name)
    }

    /// How many downloads have not ended.
    public var unfinishedCount: Int { downloads.lazy.filter { !$0.phase.isTerminal }.count }

    /// Whether no download that could transfer waits while a slot is free: the queue has
    /// started everything it may.
    public var isSettled: Bool {
      executingCount >= maxConcurrentTransfers || (count(.waiting) == 0 && count(.pausedForLimit) == 0)
    }
  }
}
