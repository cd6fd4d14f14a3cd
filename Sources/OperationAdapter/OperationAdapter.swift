// The adapter between Foundation's Operation and ActorQueue lands here.
