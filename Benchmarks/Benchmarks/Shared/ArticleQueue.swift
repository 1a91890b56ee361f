/// Holds the article's writer, queues `depth` increments with `writeNext`, then
/// releases it: the release drains the queue by recursion, one level per write.
/// Returns the final count, which is `depth` if nothing was lost.
@inline(never)
public func runArticleQueue(depth: Int) -> Int {
  let box = ArticleSingleWriter(value: Counter())
  withExtendedLifetime(box.writer) {
    for _ in 0..<depth {
      box.writeNext { $0.write.a += 1 }
    }
  }
  return box.read.a
}

/// Safe depth for benchmarking the article's queue: half the deepest queue its
/// recursive drain survived (32,512; 32,768 crashed) on an 8 MiB main-thread stack, in
/// `swift run -c release ArticleDepthProbe` on the machine in README.md.
public let articleQueueSafeDepth = 16_384
