extension LogicNode {
    /// Applies an eager operator to its evaluated arguments.
    static func apply(
        _ op: LogicOperator, _ args: [JSONValue], _ data: LogicData, _ env: LogicEnvironment
    ) throws(LogicError) -> JSONValue {
        func arg(_ i: Int) -> JSONValue { i < args.count ? args[i] : .null }
        switch op {
        case .equal: return .bool(LogicCoercion.looseEquals(arg(0), arg(1)))
        case .notEqual: return .bool(!LogicCoercion.looseEquals(arg(0), arg(1)))
        case .strictEqual: return .bool(LogicCoercion.strictEquals(arg(0), arg(1)))
        case .strictNotEqual: return .bool(!LogicCoercion.strictEquals(arg(0), arg(1)))
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            let result = LogicCoercion.compare(arg(0), arg(1), op)
            if args.count > 2, args[2] != .null {
                return .bool(result && LogicCoercion.compare(arg(1), arg(2), op))
            }
            return .bool(result)
        case .not: return .bool(!LogicCoercion.truthy(arg(0)))
        case .truthy: return .bool(LogicCoercion.truthy(arg(0)))
        case .add:
            var sum: LogicCoercion.Number = .int(0)
            for a in args { sum = add(sum, LogicCoercion.number(a)) }
            return sum.json
        case .multiply:
            var product: LogicCoercion.Number = .int(1)
            for a in args { product = multiply(product, LogicCoercion.number(a)) }
            return product.json
        case .subtract:
            let a = LogicCoercion.number(arg(0))
            if case .null = arg(1) { return negate(a).json }
            return add(a, negate(LogicCoercion.number(arg(1)))).json
        case .divide:
            let divisor = LogicCoercion.number(arg(1)).doubleValue
            guard divisor != 0 else { throw .failed("division by zero") }
            return .double(LogicCoercion.number(arg(0)).doubleValue / divisor)
        case .remainder:
            return try remainder(LogicCoercion.number(arg(0)), LogicCoercion.number(arg(1))).json
        case .min, .max:
            // The winner is returned as converted, except that a boolean stays a boolean (the
            // reference's booleans are its integers 0 and 1).
            guard !args.isEmpty else { return .double(.nan) }
            var best = LogicCoercion.number(args[0])
            var bestValue = args[0]
            for a in args.dropFirst() {
                let n = LogicCoercion.number(a)
                if n.isNaN || best.isNaN { continue }
                let better = op == .min ? LogicCoercion.numberLess(n, best) : LogicCoercion.numberLess(best, n)
                if better {
                    best = n
                    bestValue = a
                }
            }
            if case .bool = bestValue { return bestValue }
            return best.json
        case .cat:
            var text = ""
            for a in args { text += LogicCoercion.string(a) }
            return .string(text)
        case .substr:
            return substring(arg(0), arg(1), args.count > 2 ? args[2] : .null)
        case .in:
            switch arg(1) {
            case .array(let items): return .bool(items.contains { LogicCoercion.strictEquals(arg(0), $0) })
            case .string(let haystack): return .bool(contains(haystack, LogicCoercion.string(arg(0))))
            default: return .bool(false)
            }
        case .merge:
            var items: [JSONValue] = []
            for a in args {
                if case .array(let inner) = a { items.append(contentsOf: inner) } else { items.append(a) }
            }
            return .array(items)
        case .missing:
            let keys: [JSONValue]
            if case .array(let list) = arg(0) { keys = list } else { keys = args }
            return .array(missing(keys, data, env))
        case .missingSome:
            guard case .array(let keys) = arg(1) else { return .array([]) }
            let need = LogicCoercion.number(arg(0))
            let absent = missing(keys, data, env)
            let present = LogicCoercion.Number.int(Int64(keys.count - absent.count))
            let enough = !need.isNaN && !LogicCoercion.numberLess(present, need)
            return .array(enough ? [] : absent)
        case .log:
            return arg(0)
        case .var:
            return variable(arg(0), defaultValue: arg(1), data, env)
        case .fractional:
            return CustomOperators.fractional(args, env)
        case .semVer:
            return CustomOperators.semVer(args)
        case .startsWith:
            return CustomOperators.stringMatch(args, suffix: false)
        case .endsWith:
            return CustomOperators.stringMatch(args, suffix: true)
        }
    }

    private static func add(_ a: LogicCoercion.Number, _ b: LogicCoercion.Number) -> LogicCoercion.Number {
        if case .int(let x) = a, case .int(let y) = b {
            let (sum, overflow) = x.addingReportingOverflow(y)
            return overflow ? .double(Double(x) + Double(y)) : .int(sum)
        }
        return .double(a.doubleValue + b.doubleValue)
    }

    private static func multiply(_ a: LogicCoercion.Number, _ b: LogicCoercion.Number) -> LogicCoercion.Number {
        if case .int(let x) = a, case .int(let y) = b {
            let (product, overflow) = x.multipliedReportingOverflow(by: y)
            return overflow ? .double(Double(x) * Double(y)) : .int(product)
        }
        return .double(a.doubleValue * b.doubleValue)
    }

    private static func negate(_ a: LogicCoercion.Number) -> LogicCoercion.Number {
        if case .int(let x) = a, x != .min { return .int(-x) }
        return .double(-a.doubleValue)
    }

    /// The reference's remainder: the sign of the divisor (floored division); zero divisor fails.
    private static func remainder(_ a: LogicCoercion.Number, _ b: LogicCoercion.Number) throws(LogicError)
        -> LogicCoercion.Number
    {
        if case .int(let x) = a, case .int(let y) = b {
            guard y != 0 else { throw .failed("modulo by zero") }
            if y == -1 { return .int(0) }
            let r = x % y
            return .int(r != 0 && (r < 0) != (y < 0) ? r + y : r)
        }
        let x = a.doubleValue
        let y = b.doubleValue
        guard y != 0 else { throw .failed("modulo by zero") }
        if x.isNaN || y.isNaN || x.isInfinite { return .double(.nan) }
        if y.isInfinite { return .double(x == 0 || (x < 0) == (y < 0) ? x : y) }
        var r = x.truncatingRemainder(dividingBy: y)
        if r != 0 && (r < 0) != (y < 0) { r += y } else if r == 0 { r = y < 0 ? -0.0 : 0.0 }
        return .double(r)
    }

    /// `substr` over code points: a negative start counts from the end, a negative length
    /// stops that many code points before the end.
    private static func substring(_ value: JSONValue, _ start: JSONValue, _ length: JSONValue) -> JSONValue {
        let scalars = Array(LogicCoercion.string(value).unicodeScalars)
        let count = scalars.count
        let startNumber = LogicCoercion.number(start)
        var from: Int
        if startNumber.isNaN {
            from = 0
        } else {
            let s = truncated(startNumber)
            if s < 0 {
                from = -s >= count ? 0 : count + s
            } else {
                from = Swift.min(s, count)
            }
        }
        var end: Int
        if case .null = length {
            end = count
        } else {
            let lengthNumber = LogicCoercion.number(length)
            if lengthNumber.isNaN {
                end = from
            } else {
                let l = truncated(lengthNumber)
                end = l < 0 ? Swift.max(count + l, from) : from + l
            }
        }
        from = Swift.min(Swift.max(from, 0), count)
        end = Swift.min(Swift.max(end, from), count)
        var text = String.UnicodeScalarView()
        text.append(contentsOf: scalars[from..<end])
        return .string(String(text))
    }

    private static func truncated(_ n: LogicCoercion.Number) -> Int {
        switch n {
        case .int(let i): return Int(clamping: i)
        case .double(let d):
            if d >= 9.2e18 { return .max / 2 }
            if d <= -9.2e18 { return .min / 2 }
            return Int(d.rounded(.towardZero))
        }
    }

    /// Whether `needle`'s code points occur in `haystack`'s (UTF-8 byte search).
    static func contains(_ haystack: String, _ needle: String) -> Bool {
        let h = Array(haystack.utf8)
        let n = Array(needle.utf8)
        if n.isEmpty { return true }
        guard n.count <= h.count else { return false }
        for start in 0...(h.count - n.count) where h[start] == n[0] {
            if h[start..<start + n.count].elementsEqual(n) { return true }
        }
        return false
    }

    private static func missing(_ keys: [JSONValue], _ data: LogicData, _ env: LogicEnvironment) -> [JSONValue] {
        keys.filter { key in
            let value = variable(key, defaultValue: .null, data, env)
            if case .null = value { return true }
            if case .string(let s) = value, s.isEmpty { return true }
            return false
        }
    }

    /// `var` with a computed key.
    static func variable(_ key: JSONValue, defaultValue: JSONValue, _ data: LogicData, _ env: LogicEnvironment)
        -> JSONValue
    {
        switch key {
        case .null:
            if case .item(let value) = data { return value }
            return env.rootObject
        case .string(let s) where s.isEmpty:
            if case .item(let value) = data { return value }
            return env.rootObject
        case .int, .double, .bool:
            // A numeric key indexes an array or a string item; the top level is an object.
            guard case .item(let value) = data else { return defaultValue }
            let n = LogicCoercion.number(key).doubleValue
            guard n >= 0, n == n.rounded(.towardZero), n < 1e15 else { return defaultValue }
            let index = Int(n)
            switch value {
            case .array(let items): return index < items.count ? items[index] : defaultValue
            case .string(let text):
                let scalars = Array(text.unicodeScalars)
                return index < scalars.count ? .string(String(scalars[index])) : defaultValue
            default: return defaultValue
            }
        default:
            return VariablePath(text: LogicCoercion.string(key)).read(data, env) ?? defaultValue
        }
    }
}
