// Which receivers the server may connect to: public addresses only, unless the operator listed
// the URL's host (exactly as written) in `webhookAllowedHosts`.

public enum SSRFDecision: Sendable, Equatable {
    case allow
    case refuse(address: IPAddress?, AddressClass)

    public var allowed: Bool { self == .allow }
}

public struct SSRFPolicy: Sendable, Equatable {
    public let allowedHosts: Set<String>

    public init(allowedHosts: Set<String> = []) {
        self.allowedHosts = allowedHosts
    }

    public func isAllowListed(_ host: String) -> Bool { allowedHosts.contains(host) }

    /// Before resolving: a literal address, or a name that is loopback by definition (`localhost`,
    /// `*.localhost`, RFC 6761), is judged without asking the resolver.
    public func check(_ url: ReceiverURL) -> SSRFDecision {
        if isAllowListed(url.host) { return .allow }
        if let address = url.literalAddress { return check(address) }
        let name = url.host.lowercased()
        let unrooted = name.hasSuffix(".") ? String(name.dropLast()) : name
        if unrooted == "localhost" || unrooted.hasSuffix(".localhost") { return .refuse(address: nil, .loopback) }
        return .allow
    }

    /// After resolving: every address the name resolves to must be public. Refusing the whole name
    /// when any address is not (rather than using the public ones) keeps the answer the same
    /// whichever address the resolver lists first.
    public func check(host: String, addresses: [IPAddress]) -> SSRFDecision {
        if isAllowListed(host) { return .allow }
        for address in addresses {
            let decision = check(address)
            if decision != .allow { return decision }
        }
        return .allow
    }

    func check(_ address: IPAddress) -> SSRFDecision {
        let addressClass = AddressClass(address)
        return addressClass == .publicInternet ? .allow : .refuse(address: address, addressClass)
    }
}
