/// Something that reads flags: the read API of SPEC §2 (`bool`, `int`, `double`, `string`,
/// `json`, `detail`, the typed details and `evaluation`), the same for every reader.
///
/// ``FlagClient`` (the current snapshot, under a hazard slot), ``ContextFlags`` (a snapshot
/// a service view holds) and `ObservableFlags` (a client's reads, tracked by Observation)
/// conform; so does `HalyardTesting`'s `StaticFlags`, a test double over fixed values. Code that only reads flags can take any of them:
///
/// ```swift
/// func checkoutTitle(_ flags: some FlagReading) -> String {
///     flags.bool("checkout.new", default: false) ? flags.string("checkout.title", default: "Pay") : "Pay"
/// }
/// ```
///
/// The read methods are written once, in this protocol's extension, over the two requirements
/// below (which differ only in how a conformer reaches its snapshot). They are `@inlinable`, so a
/// call on a concrete type (or on `some FlagReading` the compiler can see through) costs what a
/// method of that type would: one direct call of the requirement, no witness table, no
/// existential (docs/architecture.md, "One read surface").
///
/// The protocol is closed to conformers outside Halyard (docs/public-api.md): take
/// `some FlagReading` and pass one of Halyard's conformers, never conform a type of your own.
/// Its requirements are the read path's calling convention (leading underscore: not API), and
/// they change with it.
public protocol FlagReading: Sendable {
    /// Not API: reads `key` as `kind` (Bool, Int or Double) and returns the value's bits, or nil
    /// when the caller's default is served. Counts a failure and records a due exposure; a
    /// code default (the flag served without a value) is a successful read and records one too,
    /// with the default (`defaultBits`, the caller's default as `kind`'s bits) as its value
    /// (SPEC §2/§7). The bits cost a register; they are made a value only on the exposure slow
    /// path.
    func _readScalar(_ key: String, as kind: _FlagValueKind, default defaultBits: UInt64) -> UInt64?

    /// Not API: reads `key` as `kind` with the full result, all but the value itself (which the
    /// caller makes from the returned bits or JSON, outside any protection: for a `FlagValue`
    /// conformance that is user code). Counts a failure and records a due exposure; a code
    /// default records one with `servedDefault()` (the caller's default as JSON) as its value,
    /// called only on that exposure slow path, after the protection ends.
    func _readDetail(_ key: String, as kind: _FlagValueKind, default servedDefault: () -> JSONValue?) -> _FlagRead
}

/// Not API: a served default as an exposure's value (OTLP's `feature_flag.result.value`) for a
/// detail read's code-default exposure; nil for a `FlagValue` conformance outside Halyard.
@usableFromInline
func _exposedDefault<Value: FlagValue>(_ value: Value) -> JSONValue? {
    ReadRules.exposedValue(of: value)
}

/// Not API: a detail read before its value is made (see ``FlagReading/_readDetail(_:as:default:)``).
///
/// Three words (the bits, the detail, the form and `served`), so a conformer's `_readDetail`
/// returns it in registers; the key and a String/JSON value are not copied into it (they are in
/// the served flag's ``EvaluationDetail``, which it holds at +1: the read's one retain).
public struct _FlagRead: Sendable {
    /// The value's bits, when served as Bool/Int/Double.
    @usableFromInline let bits: UInt64
    /// The served flag's detail (nil when the key was not served).
    @usableFromInline let detail: EvaluationDetail?
    @usableFromInline let form: EvaluationDetail.Form
    /// Whether the served value is to be made from ``bits`` or the detail's value (else the
    /// default).
    @usableFromInline let served: Bool

    init(served: Bool = false, bits: UInt64 = 0, detail: EvaluationDetail?, form: EvaluationDetail.Form) {
        self.bits = bits
        self.detail = detail
        self.form = form
        self.served = served
    }

    /// The evaluation of `key`, with the value made from the served bits or JSON (or
    /// `defaultValue`). Consuming, so the detail moves into the evaluation (no second retain);
    /// the caller's key is kept only when there is no served flag to take it from.
    @inlinable
    public consuming func _evaluation<Value: FlagValue>(_ key: String, _ defaultValue: Value) -> Evaluation<Value> {
        var value = defaultValue
        if served {
            switch Value._flagValueKind {
            case .bool, .int, .double: value = Value._fromBits(bits)
            case .string, .json: if let json = detail?.value, let made = Value._fromJSON(json) { value = made }
            }
        }
        return Evaluation(_key: detail == nil ? key : nil, value: value, detail: detail, form: form)
    }
}

extension FlagReading {
    /// Reads a Bool flag. Returns `default` when there are no values yet, the flag is missing,
    /// is not a JSON boolean, or was served with an error or without a value.
    ///
    /// ```swift
    /// if flags.bool("checkout.new", default: false) { showNewCheckout() }
    /// ```
    @inlinable @inline(__always)
    public func bool(_ key: String, default defaultValue: Bool) -> Bool {
        _readScalar(key, as: .bool, default: defaultValue ? 1 : 0).map(Bool._fromBits) ?? defaultValue
    }

    /// Reads an Int flag. Only JSON numbers written without fraction or exponent that fit in
    /// 64 bits are integers; a fractional number gives `default` (`TYPE_MISMATCH`).
    @inlinable @inline(__always)
    public func int(_ key: String, default defaultValue: Int) -> Int {
        _readScalar(key, as: .int, default: UInt64(bitPattern: Int64(defaultValue))).map(Int._fromBits) ?? defaultValue
    }

    /// Reads a Double flag. Any JSON number is accepted; integers widen.
    @inlinable @inline(__always)
    public func double(_ key: String, default defaultValue: Double) -> Double {
        _readScalar(key, as: .double, default: defaultValue.bitPattern).map(Double._fromBits) ?? defaultValue
    }

    /// Reads a String flag.
    @inlinable
    public func string(_ key: String, default defaultValue: String) -> String {
        evaluation(key, default: defaultValue).value
    }

    /// Reads a flag of any JSON type.
    @inlinable
    public func json(_ key: String, default defaultValue: JSONValue) -> JSONValue {
        evaluation(key, default: defaultValue).value
    }

    /// Reads a flag of any JSON type with the full result: value, variant, reason, error code
    /// and metadata (same rules as ``json(_:default:)``).
    ///
    /// ```swift
    /// let banner = flags.jsonDetail("banner", default: .string("x"))
    /// print(banner.reason, banner.variant ?? "-")
    /// ```
    ///
    /// The detail reads are one family, `<type>Detail`: ``boolDetail(_:default:)``,
    /// ``stringDetail(_:default:)``, ``intDetail(_:default:)``, ``doubleDetail(_:default:)`` and
    /// this one. ``detail(_:default:)`` is the same read under its shorter name.
    @inlinable
    public func jsonDetail(_ key: String, default defaultValue: JSONValue) -> Evaluation<JSONValue> {
        evaluation(key, default: defaultValue)
    }

    /// The same read as ``jsonDetail(_:default:)`` (an alias, kept: SPEC §2 names it): a flag
    /// of any JSON type with the full result.
    ///
    /// ```swift
    /// let banner = flags.detail("banner", default: .string("x"))
    /// ```
    @inlinable
    public func detail(_ key: String, default defaultValue: JSONValue) -> Evaluation<JSONValue> {
        evaluation(key, default: defaultValue)
    }

    /// Reads a Bool flag with the full result (same rules as ``bool(_:default:)``).
    @inlinable
    public func boolDetail(_ key: String, default defaultValue: Bool) -> Evaluation<Bool> {
        evaluation(key, default: defaultValue)
    }

    /// Reads a String flag with the full result (same rules as ``string(_:default:)``).
    @inlinable
    public func stringDetail(_ key: String, default defaultValue: String) -> Evaluation<String> {
        evaluation(key, default: defaultValue)
    }

    /// Reads an Int flag with the full result (same rules as ``int(_:default:)``).
    @inlinable
    public func intDetail(_ key: String, default defaultValue: Int) -> Evaluation<Int> {
        evaluation(key, default: defaultValue)
    }

    /// Reads a Double flag with the full result (same rules as ``double(_:default:)``).
    @inlinable
    public func doubleDetail(_ key: String, default defaultValue: Double) -> Evaluation<Double> {
        evaluation(key, default: defaultValue)
    }

    /// Reads a flag as any ``FlagValue`` type with the full result: the generic form the typed
    /// detail reads call (`flags.evaluation("max.items", default: 3)` is ``intDetail(_:default:)``).
    @inlinable
    public func evaluation<Value: FlagValue>(_ key: String, default defaultValue: Value) -> Evaluation<Value> {
        _readDetail(key, as: Value._flagValueKind) { _exposedDefault(defaultValue) }._evaluation(key, defaultValue)
    }
}
