import HTTPServer
import Testing

// Connections stop short of the open-file limit: at it, libdispatch's thread-pool monitor cannot
// open /proc/<tid>/stat and ends the process (a server on PostgreSQL under ulimit -n 1024 with
// 1,200 clients died so, Tests/e2e/edge.py).
@Suite("HTTP server settings within the open-file limit")
struct OpenFileLimitTests {
    @Test func aSmallLimitLeavesDescriptorsFreeBesideConnectionsAndLingeringRejections() {
        let fitted = HTTPServerConfiguration().fitted(toOpenFileLimit: 1024)
        #expect(fitted.maxConnections == 672)
        #expect(fitted.maxLingeringRejections == 224)
        #expect(fitted.maxConnections + fitted.maxLingeringRejections + HTTPServerConfiguration.descriptorsKeptFree == 1024)
    }

    @Test func aLargeLimitKeepsTheConfiguredCaps() {
        let configured = HTTPServerConfiguration(maxConnections: 4096, maxLingeringRejections: 256)
        let fitted = configured.fitted(toOpenFileLimit: 65_536)
        #expect(fitted.maxConnections == 4096)
        #expect(fitted.maxLingeringRejections == 256)
        #expect(configured.fitted(toOpenFileLimit: UInt64.max).maxConnections == 4096)
    }

    @Test func aConfiguredCapBelowTheRoomStays() {
        let fitted = HTTPServerConfiguration(maxConnections: 10, maxLingeringRejections: 5).fitted(toOpenFileLimit: 1024)
        #expect(fitted.maxConnections == 10)
        #expect(fitted.maxLingeringRejections == 5)
    }

    @Test func aLimitBelowWhatIsKeptFreeStillTakesOneConnection() {
        let fitted = HTTPServerConfiguration().fitted(toOpenFileLimit: 64)
        #expect(fitted.maxConnections == 1)
        #expect(fitted.maxLingeringRejections == 0)
    }
}
