import Testing
@testable import SyncthingAdapter

/// "Show Syncthing's view": the answer's words from `/rest/db/file` and the need lists.
@Suite struct SyncthingViewTests {
    let me = "AAAAAAA-BBBBBBB-CCCCCCC-DDDDDDD-EEEEEEE-FFFFFFF-GGGGGGG-HHHHHHH"
    let nas = "NNNNNNN-OOOOOOO-PPPPPPP-QQQQQQQ-RRRRRRR-SSSSSSS-TTTTTTT-UUUUUUU"
    let phone = "PHONEID-OOOOOOO-PPPPPPP-QQQQQQQ-RRRRRRR-SSSSSSS-TTTTTTT-UUUUUUU"
    var names: [String: String] { [me: "laptop", nas: "nas", phone: ""] }

    func record(_ version: [String], modified: String? = "2026-11-26T06:00:00Z", deleted: Bool? = nil) -> FileRecord {
        FileRecord(name: "notes.txt", deleted: deleted, modified: modified, size: 5, numBlocks: 1, version: version)
    }

    @Test func namesEveryDeviceByWhetherItHasTheVersion() {
        let db = DBFile(availability: [.init(id: nas, fromTemporary: false)],
                        global: record(["AAAAAAA:3", "NNNNNNN:1"]), local: record(["AAAAAAA:2"]))
        let text = SyncthingView.describe(name: "notes.txt", folderLabel: "Sync", db: db, peers: [nas, phone],
                                          neededBy: [phone], neededHere: true, myID: me, deviceNames: names)
        #expect(text == """
            notes.txt in Syncthing folder Sync
            Local version: laptop (this device) 2 (modified 2026-11-26T06:00:00Z)
            Global version: laptop (this device) 3, nas 1 (modified 2026-11-26T06:00:00Z)
            Up to date: nas
            Still needs it: laptop (this device), PHONEID
            """)
    }

    @Test func aFileEveryoneHasAndOneDeleted() {
        let db = DBFile(availability: nil, global: record(["AAAAAAA:4"], modified: nil, deleted: true), local: nil)
        let text = SyncthingView.describe(name: "gone.txt", folderLabel: "Sync", db: db, peers: [nas],
                                          neededBy: [], neededHere: false, myID: me, deviceNames: names)
        #expect(text.contains("Local version: none"))
        #expect(text.contains("Global version: laptop (this device) 4 (deleted)"))
        #expect(text.contains("Up to date: laptop (this device), nas"))
        #expect(text.contains("Still needs it: no device"))
    }
}
