// `swift run DownloadManager`: a download manager built on ActorQueue, with simulated transfers
// (no network). It tells what it does step by step; the logic is in DownloadManagerKit
// (DownloadManager.swift), which the tests drive with a scripted network.
import DownloadManagerKit
import Foundation

let held = await DownloadManagerDemo.run { line in print(line) }
exit(held ? 0 : 1)
