// Routing a `data` payload on its JSON `type` (SPEC §14): the fetch an event asks for and its parameters.

extension EventStreamMachine {
    /// The fetch a `data` payload asks for: a JSON object whose `type` is `refetchEvaluation`
    /// (nothing else is looked at to route), nil for anything else.
    static func route(_ data: String) -> Fetch? {
        guard let value = try? JSONValue(parsing: data, limits: .ofrepResponse), case .object(let object) = value,
            case .string(let type)? = object["type"], type == "refetchEvaluation"
        else { return nil }
        return Fetch(
            reason: .event,
            flagConfig: FlagConfigVersion(
                etag: parameter(object["etag"]), lastModified: parameter(object["lastModified"])))
    }

    /// Longer than this (UTF-8 bytes), a value is dropped: the fetch goes without it rather
    /// than with a URL a server refuses (SPEC §14: *default* 1 KiB).
    static let maxParameterBytes = 1_024

    /// A string verbatim, a number as its digits; anything else is not forwarded.
    private static func parameter(_ value: JSONValue?) -> String? {
        let text: String
        switch value {
        case .string(let s): text = s
        case .int(let i): text = String(i)
        case .double(let d) where d.isFinite:
            // An integral number as its digits, however large (never `1e+20`).
            text = d.rounded() == d ? integralDigits(d) : String(d)
        default: return nil
        }
        return text.utf8.count <= maxParameterBytes ? text : nil
    }
}
