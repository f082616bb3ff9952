// What `healthd --help` and `healthd COMMAND --help` print.

public enum HelpText {
    public static func text(for topic: String?) -> String {
        switch topic {
        case "serve": return serve
        case "seed": return seed
        case "import": return importCommand
        case "export": return export
        case "invite": return invite
        case "users": return users
        default: return overview
        }
    }

    static let common = """
          --config FILE     read settings from FILE (JSON; see config.example.json)
          --data-dir DIR    where the SQLite database and the admin token live (default ./healthd-data)
          --database URL    use PostgreSQL at URL (postgres://user@host:port/db) instead of SQLite;
                            several 'serve' nodes may share one (docs/operations.md)
          -h, --help        show this help
        """

    public static let overview = """
        healthd: a HealthKit-style health-data server (typed samples, per-app permissions,
        statistics, an anchored change feed and a server-side pedometer) over HTTP/1.1.

        Usage: healthd COMMAND [OPTIONS]
               healthd --version

        Commands:
          serve     run the HTTP server
          seed      write realistic mock data for a user
          import    import an Apple Health export (export.zip or export.xml) or healthd's own NDJSON export
          export    write every sample of a user as NDJSON
          invite    print an invitation code with which a person sets their password
          users     list the users and whether each has activated their account

        Every command takes --config FILE, --data-dir DIR and --database URL. Run 'healthd COMMAND --help' for its options.
        The admin token is HEALTHD_ADMIN_TOKEN, or generated on first start and kept in DATA_DIR/admin-token.
        """

    public static let serve = """
        Usage: healthd serve [--config FILE] [--host H] [--port P] [--data-dir DIR] [--database URL] [--public-dir DIR]
                             [--statistics-memory MIB] [--demo [--time-zone ZONE]]

        Runs the HTTP server. Flags override the config file, which overrides the defaults.
          --host H          address to listen on (default 127.0.0.1; 0.0.0.0 or :: for all)
          --port P          TCP port (default 8080; 0 picks a free port and prints it)
          --demo            create a 'demo' user with four weeks of realistic data and print
                            a dashboard URL with a read token, opening on today from local
                            noon and on yesterday, the last whole day, before it
          --public-dir DIR  the dashboard's files (index.html, openapi.json); found on its own in a
                            checkout (next to .build/) or an install (PREFIX/share/healthd/Public)
          --time-zone ZONE  the IANA zone the demo person lives in; give your browser's (default:
                            the zone TZ names, else the server's from /etc/localtime: UTC in
                            most containers)
          --statistics-memory MIB
                            decoded statistics rollups kept in memory (default 64; also
                            HEALTHD_STATISTICS_MEMORY_MIB or statisticsMemoryMiB in the config file)
        \(common)
        Environment (flags override it; it overrides the config file):
          HEALTHD_PUBLIC_DIR   as --public-dir
          HEALTHD_PORT         as --port
          HEALTHD_ADMIN_TOKEN  the admin token (at least 16 characters); otherwise one is generated on the
                               first start, printed once and kept in DATA_DIR/admin-token (mode 0600)

        SIGTERM and SIGINT stop it gracefully: in-flight requests finish, nothing acknowledged is lost.
        """

    public static let seed = """
        Usage: healthd seed --user NAME [--days N] [--time-zone ZONE] [--config FILE] [--data-dir DIR] [--database URL]

        Writes realistic mock data for the last N full local days (default 28) and today so far: steps
        in short samples through the day from a phone and a watch, heart rate, sleep stages,
        workouts, body mass. Creates the user if missing; a rerun adds nothing twice (and adds what
        has ended since the last run today).
          --time-zone ZONE  the IANA zone the person lives in, e.g. America/New_York (default:
                            the zone TZ names, else the server's from /etc/localtime: UTC in
                            most containers)
        \(common)
        """

    public static let importCommand = """
        Usage: healthd import FILE --user NAME [--config FILE] [--data-dir DIR] [--database URL]

        Imports an Apple Health export (export.zip or export.xml), or an NDJSON file written by
        'healthd export' or GET /v1/export (a backup, or another server's data: uuids and apps are
        kept), streaming, with progress. The format is read from the file's first bytes.
        A person's backup ('healthd export') restores their settings too: apps and permissions,
        source order, characteristics, activity goals. Running it twice imports nothing twice.
        \(common)
        """

    public static let export = """
        Usage: healthd export --user NAME [--output FILE] [--config FILE] [--data-dir DIR] [--database URL]

        Writes the person's backup (to standard output by default): a line of their settings (apps
        and permissions, the source order of every type, characteristics, activity goals; never a
        token), then every sample as NDJSON, oldest first. 'healthd import' restores it.
        \(common)
        """

    public static let invite = """
        Usage: healthd invite NAME [--config FILE] [--data-dir DIR] [--database URL]

        Prints a new invitation code for the person NAME (created if there is none), as POST
        /v1/users and POST /v1/users/{id}/invitation answer it: the person activates their account
        with it and a password of their choice (POST /v1/people/activate, or the dashboard's
        sign-in page). The code works once, for 7 days; a new one voids the old. For a person who
        is already active it resets the password: activating it ends every session.
        \(common)
        """

    public static let users = """
        Usage: healthd users [--json] [--config FILE] [--data-dir DIR] [--database URL]

        Lists the users, oldest first, one line each: the id, the name, when the user was made,
        and "activated" once the person has set a password with their invitation, else
        "not activated" ('healthd invite NAME' prints a new code). It reads the store while a
        server runs on it too.
          --json            print what GET /v1/users answers: {"users":[{"id","name","created","activated"}]}
        \(common)
        """
}
