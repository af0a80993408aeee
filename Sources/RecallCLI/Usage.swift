/// The help texts of the `recall` tool.
enum Usage {
    static let main = """
        recall — caching and retry middleware for HTTP clients

        USAGE
          recall demo [--seed N] [--quiet]     run a scripted workload against an in-process service (no network)
          recall get URL [options]             fetch URL through a Recall pipeline
          recall replay FILE [options]         what Recall would have done with your traffic (a HAR capture or an access log)
          recall <command> --help              help for one command
        """

    static let demo = """
        recall demo — a scripted workload through a Pipeline, no network needed

        Registers an in-process service that behaves like a flaky, cacheable API, sends a
        fixed sequence of requests through a Pipeline with an HTTP cache and exponential backoff,
        and prints each request's outcome (network, hit, revalidated, stale; attempts) and a summary.

        OPTIONS
          --seed N     seed of the jitter random source (default 1), for reproducible delays
          --quiet      print only the summary
          -h, --help   this help
        """

    static let get = """
        recall get — fetch a URL through a Recall pipeline and show what happened

        USAGE
          recall get URL [-v] [--retries N] [--timeout SECONDS] [--max-body SIZE] [-o FILE] [--cache-dir DIR] [-H 'Name: value']...

        Prints the status line, the body as it came (bytes, not re-encoded; a binary body is not
        written to a terminal) and what the cache and the retrier did.

        OPTIONS
          -v, --verbose        also print the response header fields and every pipeline event
          --retries N          attempts in all, 1 to 10, with exponential backoff (default 3; 1 disables retries)
          --timeout SECONDS    per-attempt timeout enforced by Recall, 0.001 to 86400 (default 30)
          --max-body SIZE      the largest response body accepted, such as 500KB, 256MB or 2GB, up to 4GB
                               (default 64MB); a larger one fails as soon as it is seen, and nothing is kept.
                               The body is held in memory: allow what memory can hold, a few times over
          -o, --output FILE    write the body to FILE instead of standard output
          --cache-dir DIR      use (and keep) a disk cache in DIR, a new or empty directory or one made by
                               recall, owned by you and not writable by others (e.g. ~/.cache/recall);
                               when another process has it open, recall fetches without it and says so
          -H 'Name: value'     add a request header field (repeatable)
          -h, --help           this help
        """

    static let replay = """
        recall replay — what Recall would have done with your real traffic

        USAGE
          recall replay FILE [--format har|log] [--sizes LIST] [--chart FILE.svg]

        FILE is a HAR 1.2 capture (browsers' developer tools: Network panel → 'Save all as HAR';
        many proxies export one too) or an access log in Common or Combined Log Format
        (Apache, nginx's default 'combined'). '-' reads standard input; a pipe, a FIFO or <(...)
        works too (the input is read once, the format detected from the bytes read).
        Files are streamed and bodies never held, whatever sizes they state: memory grows with a
        log's requests and distinct targets, and with a HAR's entries and their header fields.

        For a HAR capture, every entry is replayed through Recall's real HTTPCache, at the capture's
        times, answered by the captured responses: hits, revalidations, stale answers, misses,
        origin requests and body bytes saved, next to what the capturing client's own cache did.

        For both, the GET requests answered 200, 203 or 304 are replayed through Recall's
        MemoryStorage under each eviction policy at several cache sizes, next to Belady's offline
        optimum: object and byte hit ratios, as a table (and a chart with --chart).

        OPTIONS
          --format har|log   the input's format (default: from the name, .har/.json or .log, else from its first byte)
          --sizes LIST       cache sizes: shares of the working set and/or sizes, comma-separated
                             (default 1%,5%,10%,25%,50%; e.g. 10%,64MB)
          --chart FILE.svg   also write an SVG chart (size on x, hit ratio on y, one line per policy)
          -h, --help         this help

        A malformed input stops the replay with the line it was found on; exit status 1.
        """
}
