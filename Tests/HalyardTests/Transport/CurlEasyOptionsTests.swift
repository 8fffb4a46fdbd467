#if os(Linux)
    import Testing

    @testable import Halyard

    /// The option values both curl transfers compute the same way (``CurlEasyOptions``).
    @Suite struct CurlEasyOptionsTests {
        @Test func timeoutsBecomeWholeMillisecondsOfAtLeastOne() {
            #expect(CurlEasyOptions.milliseconds(.seconds(2)) == 2000)
            #expect(CurlEasyOptions.milliseconds(.milliseconds(1500)) == 1500)
            #expect(CurlEasyOptions.milliseconds(.microseconds(1999)) == 1)  // truncated, then at least 1
            // 0 would mean "no timeout" to libcurl: a zero or negative duration is the shortest one.
            #expect(CurlEasyOptions.milliseconds(.zero) == 1)
            #expect(CurlEasyOptions.milliseconds(.milliseconds(-5)) == 1)
        }

        @Test func aHugeTimeoutSaturatesInsteadOfTrapping() {
            #expect(CurlEasyOptions.milliseconds(.seconds(Int64.max)) == Int.max)
            #expect(CurlEasyOptions.milliseconds(.seconds(Int64.max / 1000) + .seconds(1)) == Int.max)
            #expect(CurlEasyOptions.milliseconds(.seconds(Int64.min)) == 1)
        }

        @Test func headerLinesAreTrimmedAndAnEmptyValueIsSpelledWithASemicolon() {
            #expect(CurlEasyOptions.headerLine("Authorization", " Bearer k ") == "Authorization: Bearer k")
            #expect(CurlEasyOptions.headerLine("X-Empty", "  ") == "X-Empty;")
            #expect(CurlEasyOptions.headerLine("Accept", "text/event-stream") == "Accept: text/event-stream")
        }
    }
#endif
