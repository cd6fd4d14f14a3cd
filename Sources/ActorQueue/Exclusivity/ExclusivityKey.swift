import Synchronization

/// A name that operations hold one at a time: while an operation with
/// ``OperationTrait/exclusive(_:in:)-(ExclusivityKey...,_)`` for a key runs, no other operation of the same key and
/// ``ExclusivityDomain`` starts.
///
/// ```swift
/// queue.addOperation(traits: [.exclusive("migration")]) { try await migrate() }
/// ```
///
/// Names are interned when a key is made (one short lock, outside the scheduler's), so the
/// scheduler compares and hashes integers, never your strings; each distinct name is kept for
/// the life of the process. Foundation has no equivalent: PSOperations' `ExclusivityController`
/// and ProcedureKit's `MutualExclusion` are the usual stand-ins (see Migration.md).
public struct ExclusivityKey: Sendable, Hashable, CustomStringConvertible,
  ExpressibleByStringLiteral
{
  /// The name it was made with.
  public let name: String
  /// Its interned number: equal names have equal numbers.
  let id: UInt64

  /// The key named `name`.
  public init(_ name: String) {
    self.name = name
    id = Self.names.intern(name)
  }

  /// The key named by a string literal: `.exclusive("migration")`.
  public init(stringLiteral name: String) {
    self.init(name)
  }

  /// Whether both have the same name.
  public static func == (lhs: ExclusivityKey, rhs: ExclusivityKey) -> Bool { lhs.id == rhs.id }
  /// Hashes its interned number.
  public func hash(into hasher: inout Hasher) { hasher.combine(id) }

  /// Its name, in quotes: `"migration"`.
  public var description: String { "\"\(name)\"" }

  /// The key interned as `id` (the scheduler's wait report, under its lock: the names' lock is a
  /// leaf, never held while taking the scheduler's).
  init(interned id: UInt64) {
    self.id = id
    name = Self.names.name(of: id)
  }

  private static let names = InternedNames()
}

/// Names interned to numbers, 1 up, kept for the life of the process: what keys and tags are
/// made of, so that the scheduler hashes and compares integers, never a user's strings. Its lock
/// is a leaf: never held while taking the scheduler's (it may be taken under it).
/// A `LockedValue`, not `Synchronization.Mutex`, so ThreadSanitizer sees its handovers (Lock.swift).
final class InternedNames: Sendable {
  private let names = LockedValue<(byName: [String: UInt64], byID: [String])>(([:], []))

  /// The number of `name`, given it now if it has none.
  func intern(_ name: String) -> UInt64 {
    names.withLock { names in
      if let id = names.byName[name] { return id }
      names.byID.append(name)
      let id = UInt64(names.byID.count)
      names.byName[name] = id
      return id
    }
  }

  /// The name numbered `id` (one `intern` returned).
  func name(of id: UInt64) -> String {
    names.withLock { $0.byID[Int(id) - 1] }
  }
}

/// Where exclusivity keys apply: operations exclude each other only on an equal key in the same
/// domain.
///
/// By default an operation's keys are in its queue's own domain (``ActorQueue/exclusivityDomain``):
/// the same name on two queues excludes nothing. To exclude across queues, make a domain and
/// name it in the trait: `.exclusive("database", in: storage)`. ``shared`` is one domain for
/// the whole process, for keys that mean one thing everywhere; it is never used unless named.
public final class ExclusivityDomain: Sendable, CustomStringConvertible {
  /// Its name, if it was given one (for descriptions and the wait report).
  public let name: String?
  /// Unique in the process; a queue's own domain has the high bit set and its queue's generation.
  let id: UInt64
  /// For a queue's own domain: that queue's generation (only its operations may use it).
  let ownerQueue: UInt64?

  private static let counter = Atomic<UInt64>(0)

  /// A new domain, distinct from every other.
  public init(name: String? = nil) {
    self.name = name
    id = Self.counter.add(1, ordering: .relaxed).newValue
    ownerQueue = nil
  }

  /// The own domain of the queue of generation `generation`.
  init(queueGeneration generation: UInt64, name: String?) {
    self.name = name
    id = Self.queueDomainBit | generation
    ownerQueue = generation
  }

  /// The bit that marks a queue's own domain.
  static let queueDomainBit: UInt64 = 1 << 63

  /// One domain for the whole process: a key named in it excludes every operation of every
  /// queue that names the same key in it.
  public static let shared = ExclusivityDomain(name: "shared")

  /// `shared`, its name, or `domain #n`.
  public var description: String { name ?? "domain #\(id & ~Self.queueDomainBit)" }
}

extension OperationTrait {
  /// Runs the operation only while it holds every one of `keys` in `domain` (its queue's own
  /// domain by default): no two operations holding an equal key in the same domain execute at
  /// once, whichever queues they are on.
  ///
  /// Keys are taken all together, when the operation is given its slot, never one by one, so two
  /// operations that want the same keys in different orders cannot deadlock. An operation whose
  /// keys are busy leaves its queue's ready set (it blocks nothing behind it) and waits,
  /// `.pending`, holding no slot and no task; ``ActorQueue/waitReport()`` names the key and its
  /// holder. When a key is released, the best waiter (priority, then submission order across
  /// all queues) whose queue has room gets it; one passed over 16 times by later operations,
  /// because another of its keys was busy, reserves its keys until it runs. A paused holder
  /// keeps its keys; a retry's backoff releases them. Empty `keys` change nothing; a repeated
  /// key counts once; given several times, the keys add up. A domain of another queue
  /// (``ActorQueue/exclusivityDomain``) is refused with a precondition message when the
  /// operation is added.
  ///
  /// Cost: a queue that ever gets such an operation decides its starts in one pass over the
  /// queues with keys (O(those queues) per start); a queue without one pays nothing.
  public static func exclusive(
    _ keys: ExclusivityKey..., in domain: ExclusivityDomain? = nil
  ) -> OperationTrait {
    exclusive(keys, in: domain)
  }

  /// ``exclusive(_:in:)-(ExclusivityKey...,_)`` with the keys in an array (computed keys: one per
  /// account, per file).
  public static func exclusive(
    _ keys: [ExclusivityKey], in domain: ExclusivityDomain? = nil
  ) -> OperationTrait {
    OperationTrait(kind: .exclusive(ExclusiveRequest(keys: keys, domain: domain)))
  }
}

/// One `.exclusive` trait, as given.
struct ExclusiveRequest: Sendable {
  var keys: [ExclusivityKey]
  var domain: ExclusivityDomain?
}

/// An operation's `.exclusive` traits, the first kept inline: most operations give one, and then
/// folding their traits allocates nothing.
struct ExclusiveRequests: Sendable {
  var first: ExclusiveRequest?
  var rest: [ExclusiveRequest] = []

  var isEmpty: Bool { first == nil }

  mutating func append(_ request: ExclusiveRequest) {
    if first == nil { first = request } else { rest.append(request) }
  }

  /// All of them, in the order given.
  var all: [ExclusiveRequest] { first.map { [$0] + rest } ?? [] }
}
