import HealthModel
import HealthStore

/// `healthd users`: one line per user, oldest first, as `GET /v1/users` lists them: the id, the
/// name (padded so the columns line up), when the user was made, and whether the person has
/// activated their invitation.
public enum UserListText {
    public static func lines(_ users: [UserListing]) -> [String] {
        let nameWidth = users.map(\.user.name.count).max() ?? 0
        return users.map { listing in
            let name = listing.user.name + String(repeating: " ", count: nameWidth - listing.user.name.count)
            return "\(listing.user.id)  \(name)  created \(RFC3339.format(listing.created))  "
                + (listing.activated ? "activated" : "not activated")
        }
    }
}
