import CArgon2

/// Argon2 (RFC 9106) through the system's reference implementation, libargon2: the one shell of
/// this module besides the system random source.
public enum Argon2 {
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// libargon2's error code and its message (a parameter out of its range, memory not allocated).
        case library(code: Int32, message: String)
        /// Parameters outside what a stored hash may carry (`PasswordHash`'s bounds).
        case outOfBounds(Argon2Parameters)
        public var description: String {
            switch self {
            case .library(let code, let message): "argon2 failed (\(code)): \(message)"
            case .outOfBounds(let parameters): "Argon2 parameters outside the bounds a stored hash may have: \(parameters)"
            }
        }
    }

    /// Argon2id's tag of `length` bytes. `secret` and `associatedData` are RFC 9106's K and X (empty
    /// for passwords here; they are parameters so the RFC's test vectors can be checked). One thread
    /// whatever the lanes: the output is the same, and a server hashes many passwords side by side.
    public static func argon2id(password: [UInt8], salt: [UInt8], secret: [UInt8] = [], associatedData: [UInt8] = [],
                                iterations: UInt32, memoryKiB: UInt32, lanes: UInt32, length: Int) throws(Failure) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: length)
        var password = password, salt = salt, secret = secret, associatedData = associatedData
        let code: Int32 = output.withUnsafeMutableBufferPointer { out in
            password.withUnsafeMutableBufferPointer { pwd in
                salt.withUnsafeMutableBufferPointer { salt in
                    secret.withUnsafeMutableBufferPointer { secret in
                        associatedData.withUnsafeMutableBufferPointer { ad in
                            var context = argon2_context(
                                out: out.baseAddress, outlen: UInt32(out.count),
                                pwd: pwd.baseAddress, pwdlen: UInt32(pwd.count),
                                salt: salt.baseAddress, saltlen: UInt32(salt.count),
                                secret: secret.baseAddress, secretlen: UInt32(secret.count),
                                ad: ad.baseAddress, adlen: UInt32(ad.count),
                                t_cost: iterations, m_cost: memoryKiB, lanes: lanes, threads: 1,
                                version: UInt32(ARGON2_VERSION_13.rawValue),
                                allocate_cbk: nil, free_cbk: nil, flags: 0)
                            return argon2_ctx(&context, Argon2_id)
                        }
                    }
                }
            }
        }
        for index in password.indices { password[index] = 0 }
        guard code == ARGON2_OK.rawValue else {
            let message = argon2_error_message(code).map { String(cString: $0) } ?? "unknown error"
            throw .library(code: code, message: message)
        }
        return output
    }
}
