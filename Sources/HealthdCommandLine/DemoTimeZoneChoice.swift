import Foundation

/// The zone the demo person lives in (`seed`, `serve --demo`): `--time-zone`, else `TZ`, else the
/// server's local zone. Pure: the executable passes the environment's `TZ` and the local zone in.
///
/// Foundation reads a plain `TZ=America/New_York` itself, but takes the POSIX forms
/// `TZ=:America/New_York` and `TZ=/usr/share/zoneinfo/America/New_York`, or a misspelt name, as
/// UTC without a word; a person in New York would then see their demo runs at 04:17.
public struct DemoTimeZoneChoice: Sendable, Equatable {
    public enum Origin: Sendable, Equatable {
        /// `--time-zone ZONE`.
        case flag
        /// The `TZ` environment variable.
        case environment
        /// The server's local zone (`/etc/localtime`): UTC in most containers.
        case serverLocal
    }

    public var zone: TimeZone
    public var origin: Origin
    /// Set when `TZ` named no zone the tz database has, so the server's zone was used instead.
    public var warning: String?

    /// An unknown `--time-zone`: the command stops, since the person asked for that zone.
    public struct UnknownZone: Error, Equatable, CustomStringConvertible {
        public var identifier: String
        public var description: String {
            "--time-zone: unknown time zone '\(identifier)' (an IANA name such as America/New_York)"
        }
    }

    public init(zone: TimeZone, origin: Origin, warning: String? = nil) {
        self.zone = zone
        self.origin = origin
        self.warning = warning
    }

    public static func resolve(flag: String?, environmentTZ: String?, serverLocal: TimeZone) throws(UnknownZone) -> DemoTimeZoneChoice {
        if let flag {
            guard let zone = TimeZone(identifier: flag) else { throw UnknownZone(identifier: flag) }
            return DemoTimeZoneChoice(zone: zone, origin: .flag)
        }
        guard let text = environmentTZ, !text.isEmpty else { return DemoTimeZoneChoice(zone: serverLocal, origin: .serverLocal) }
        if let identifier = zoneName(fromTZ: text), let zone = TimeZone(identifier: identifier) {
            return DemoTimeZoneChoice(zone: zone, origin: .environment)
        }
        return DemoTimeZoneChoice(zone: serverLocal, origin: .serverLocal,
                                  warning: "TZ='\(text)' names no time zone of the tz database; the demo person lives in "
                                      + "\(serverLocal.identifier), the server's zone (use --time-zone ZONE, e.g. America/New_York)")
    }

    /// The IANA name in a `TZ` value: `America/New_York`, `:America/New_York`, or a path into the
    /// zoneinfo folder. Nil for other POSIX rule strings (`EST5EDT,M3.2.0,M11.1.0`).
    static func zoneName(fromTZ text: String) -> String? {
        var name = Substring(text)
        if name.hasPrefix(":") { name = name.dropFirst() }
        if name.hasPrefix("/") {
            guard let range = name.range(of: "/zoneinfo/") else { return nil }
            name = name[range.upperBound...]
        }
        return name.isEmpty || name.contains(",") ? nil : String(name)
    }

    /// Where the zone came from, for the start-up line ("America/New_York, from TZ").
    public var description: String {
        switch origin {
        case .flag: return "\(zone.identifier), from --time-zone"
        case .environment: return "\(zone.identifier), from TZ"
        case .serverLocal: return "\(zone.identifier), the server's zone"
        }
    }

    /// A hint when the person got the server's UTC without asking: a browser elsewhere would see
    /// the demo person's day shifted by its offset.
    public var hint: String? {
        let utcNames: Set<String> = ["UTC", "Etc/UTC", "GMT", "Etc/GMT", "Universal", "Etc/Universal", "Zulu", "Etc/Zulu", "UCT", "Etc/UCT"]
        guard origin == .serverLocal, utcNames.contains(zone.identifier) else { return nil }
        return "the demo person lives in \(zone.identifier), the server's zone; a browser in another zone sees "
            + "their day shifted (a 07:00 walk at 02:00 in New York): pass --time-zone ZONE or TZ=ZONE with your own zone"
    }
}
