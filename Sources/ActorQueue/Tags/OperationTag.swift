/// A label an operation carries, to cancel or find a set of operations together without keeping
/// their handles: every request of a screen, every upload of an account.
///
/// ```swift
/// queue.addOperation(traits: [.tags("profile-screen")]) { try await loadAvatar() }
/// // Leaving the screen:
/// queue.cancelOperations(tagged: "profile-screen")
/// ```
///
/// Names are interned when a tag is made (one short lock, outside the scheduler's), so the
/// scheduler compares and hashes integers, never your strings; each distinct name is kept for
/// the life of the process. An empty name is refused with a precondition message (a tag that
/// names nothing is a bug, as SwiftQueue's `TagConstraint` asserts). Foundation has no tags: the
/// usual stand-in walks `OperationQueue.operations` and tests each one's `name` (see Migration.md).
public struct OperationTag: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
  /// The name it was made with.
  public let name: String
  /// Its interned number: equal names have equal numbers.
  let id: UInt64

  /// The tag named `name`, which must not be empty (precondition, in every build configuration).
  public init(_ name: String) {
    guard !name.isEmpty else {
      fatalError(
        "ActorQueue: an OperationTag needs a name; an empty one would tag operations that no call can tell "
          + "apart from untagged ones (name the screen, account or feature the operations belong to)")
    }
    self.name = name
    id = Self.names.intern(name)
  }

  /// The tag named by a string literal: `.tags("profile-screen")`.
  public init(stringLiteral name: String) {
    self.init(name)
  }

  /// The tag interned as `id`.
  init(interned id: UInt64) {
    self.id = id
    name = Self.names.name(of: id)
  }

  /// Whether both have the same name.
  public static func == (lhs: OperationTag, rhs: OperationTag) -> Bool { lhs.id == rhs.id }
  /// Hashes its interned number.
  public func hash(into hasher: inout Hasher) { hasher.combine(id) }

  /// Its name, in quotes: `"profile-screen"`.
  public var description: String { "\"\(name)\"" }

  private static let names = InternedNames()
}

extension OperationTrait {
  /// Labels the operation with `tags`, so that ``ActorQueue/cancelOperations(tagged:)-swift.method`` (one
  /// queue), ``ActorQueue/cancelOperations(tagged:)-swift.type.method`` (every queue) and
  /// ``ActorQueue/operations(tagged:)`` reach it. Given several times, the tags add up; a repeated
  /// tag counts once; empty `tags` change nothing. A prepared operation's tags apply from when
  /// it is added to a queue. With `addOperation(traits:coalescingBy:)`, each caller's handle
  /// carries its caller's tags and a tag reaches that handle alone, as its `cancel()` would: the
  /// shared work is cancelled once no caller waits for it, so leaving one screen never cancels a
  /// load another screen still waits for. The shared work shows the tags of the call that
  /// created it (``AnyQueueOperation/tags``), and no tag reaches it directly.
  ///
  /// Cost: a few hash-table updates per tag when the operation is added, when it ends and when
  /// its record is freed (figures in the Performance article); an operation without tags pays
  /// nothing. Make tags once where operations are added in a loop: each `OperationTag(name)`
  /// interns its name.
  public static func tags(_ tags: OperationTag...) -> OperationTrait {
    self.tags(tags)
  }

  /// ``tags(_:)-(OperationTag...)`` with the tags in an array (computed tags: one per account).
  public static func tags(_ tags: [OperationTag]) -> OperationTrait {
    var ids: [UInt64] = []
    for tag in tags where !ids.contains(tag.id) { ids.append(tag.id) }
    return OperationTrait(kind: .tags(tags, ids: ids))
  }
}
