import NIOCore
import NIOEmbedded
import Testing
import SyncBadgeCore
@testable import SyncBadgeServer

/// The session, the NIO adapter between a channel and the hub, on an EmbeddedChannel: what
/// it reads reaches the hub as lines, what the hub hands it is written, its writability
/// reaches the hub, and the hub's `BYE` closes it.
@Suite struct SessionTests {
    /// A Session in an EmbeddedChannel on the harness's loop, and the lines it wrote.
    final class ChannelClient {
        let channel: EmbeddedChannel
        private var received = ReceivedLines()

        init(_ h: HubHarness) {
            let session = Session(hub: h.hub, peerPID: 1)
            channel = EmbeddedChannel(handler: session, loop: h.loop)
        }

        func write(_ bytes: String) {
            try? channel.writeInbound(ByteBuffer(string: bytes))
        }

        func lines() -> [String] {
            while let buffer = try? channel.readOutbound(as: ByteBuffer.self) { received.received(String(buffer: buffer)) }
            return received.all()
        }
    }

    @Test func aSessionHandsItsLinesToTheHubAndWritesTheAnswers() throws {
        let h = try HubHarness()
        let c = ChannelClient(h)
        c.write("1 HELLO proto=1 role=viewer\n2 PI")
        c.write("NG\n")
        let lines = c.lines()
        #expect(lines.count == 2 && lines[0].hasPrefix("1 OK proto=1") && lines[1] == "2 OK")
    }

    /// A client that shuts down its writing side with a line unfinished: the lines before it
    /// are answered, the unfinished one never is.
    @Test func aLastLineWithoutLFIsNeverAnswered() throws {
        let h = try HubHarness()
        let viewer = ChannelClient(h)
        viewer.write("0 HELLO proto=1 role=viewer\n")
        _ = viewer.lines()
        viewer.write("1 PING\n2 PI")
        viewer.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(viewer.lines() == ["1 OK"])
    }

    /// The hub's `BYE` is written, then the channel closes.
    @Test func aTooLongLineClosesTheChannelAfterItsBye() throws {
        let h = try HubHarness()
        let c = ChannelClient(h)
        c.write("1 PING\n" + String(repeating: "x", count: LineFramer.maxLineLength + 1))
        #expect(c.lines() == ["1 ERR hello-required", "* BYE too-long"])
        #expect(!c.channel.isActive)
    }

    /// The channel's writability reaches the hub: while it is not writable pushes are
    /// dropped, and once it is again, the client gets the latest state (the root's, the
    /// observed directory's own) and one RESET.
    @Test func aSlowReadersChannelGetsTheCatchUpOnceWritable() throws {
        let h = try HubHarness()
        try h.addRoot(files: ["a", "b"])
        let viewer = ChannelClient(h)
        viewer.write("0 HELLO proto=1 role=viewer\n1 OBSERVE /r\n")
        #expect(viewer.lines().last == "1 OK count=2")
        viewer.channel.isWritable = false
        viewer.channel.pipeline.fireChannelWritabilityChanged()
        h.hub.apply([.changed(path: Array("/r/a".utf8), kind: .file, what: .modify)])
        #expect(viewer.lines() == [])
        viewer.channel.isWritable = true
        viewer.channel.pipeline.fireChannelWritabilityChanged()
        let back = viewer.lines()
        #expect(back.count == 3)
        #expect(back.first == "* ROOT /r pending watches=1")
        #expect(back.dropFirst().first?.hasPrefix("* ITEM /r pending ") == true)
        #expect(back.last == "* RESET /r")
    }
}
