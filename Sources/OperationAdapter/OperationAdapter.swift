// The adapter between Foundation's Operation and ActorQueue lands here.
public import ActorQueue
public import Foundation
