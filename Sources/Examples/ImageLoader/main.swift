// `swift run ImageLoader`: an image loader built on ActorQueue, with a simulated server (no
// network). It tells what it does step by step; the logic is in ImageLoaderKit
// (ImageLoader.swift), which the tests drive with a scripted server.
import Foundation
import ImageLoaderKit

let held = await ImageLoaderDemo.run { line in print(line) }
exit(held ? 0 : 1)
