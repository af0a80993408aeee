/// The help texts of the `recall` tool.
enum Usage {
    static let main = """
    recall — caching and retry middleware for HTTP clients

    USAGE
      recall demo [--seed N] [--quiet]     run a scripted workload against an in-process service (no network)
      recall get URL [options]             fetch URL through a Recall pipeline
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
      recall get URL [-v] [--retries N] [--timeout SECONDS] [--cache-dir DIR] [-H 'Name: value']...

    OPTIONS
      -v, --verbose        also print the response header fields and every pipeline event
      --retries N          attempts in all, 1 to 10, with exponential backoff (default 3; 1 disables retries)
      --timeout SECONDS    per-attempt timeout enforced by Recall, 0.001 to 86400 (default 30)
      --cache-dir DIR      use (and keep) a disk cache in DIR, a new or empty directory or one made by
                           recall, owned by you and not writable by others (e.g. ~/.cache/recall);
                           when another process has it open, recall fetches without it and says so
      -H 'Name: value'     add a request header field (repeatable)
      -h, --help           this help
    """
}
