/// A flag's targeting rule compiled against the flag itself (its key and its variants) when the
/// definitions are loaded: what an evaluation runs (docs/definitions.md, "Evaluation cost").
///
/// A rule's result is a variant name, so the usual shapes are resolved to the flag's
/// ``FlagDefinitions/Outcome`` once, here, rather than per evaluation:
/// - a constant result (`"on"`, `null`, a name the flag does not have) is its outcome;
/// - `if`'s conditions are ``LogicTest``s (typed, no `JSONValue` per operator) and its branches
///   are rules of their own;
/// - `fractional` on the flag key and the targeting key resumes a hash of the flag key fed
///   once, and its buckets name their outcomes.
///
/// Anything else is the compiled ``LogicNode``, evaluated and its result looked up among the
/// variants (``FlagDefinitions/outcome(of:variants:)``), as before.
///
/// **Contract:** ``outcome(_:_:_:_:)`` is
/// `FlagDefinitions.outcome(of: rule.evaluate(.root, env))` of the node it was compiled from (an
/// error mapped to its failure outcome; `env` being ``LogicEnvironment/init(_:flagKey:timestamp:)``
/// of the inputs), for every context (`VariantRuleTests` checks it on every typed shape and on
/// generated rules and contexts).
indirect enum VariantRule: Sendable {
    /// The rule's result does not depend on the context.
    case fixed(FlagDefinitions.Outcome)
    /// `if` / `?:`: the first branch whose test holds, else `otherwise`.
    case conditional([Branch], otherwise: VariantRule)
    /// `fractional` with constant buckets that buckets on the flag key and the targeting key.
    case fractional(FractionalOutcomes)
    /// Any other rule: evaluated, and its result looked up among the flag's variants.
    case node(LogicNode)

    /// One condition of an `if` and the rule of its branch.
    struct Branch: Sendable {
        /// The condition.
        let test: LogicTest
        /// What the rule gives when the condition holds.
        let rule: VariantRule
    }

    /// `fractional`'s plan with its buckets resolved to the flag's outcomes, and the hash of the
    /// flag key already fed (bucketing v2 hashes the flag key followed by the targeting key).
    struct FractionalOutcomes: Sendable {
        /// MurmurHash3 (seed 0) fed the flag key's UTF-8.
        let flagKeyHash: MurmurHash3
        /// The buckets' weights (``FractionalPlan/bucket(of:)``).
        let plan: FractionalPlan
        /// Each bucket's outcome (its variant looked up among the flag's).
        let outcomes: [FlagDefinitions.Outcome]
    }

    /// `node` compiled against the flag `flagKey` with variants `variants`.
    init(_ node: LogicNode, flagKey: String, variants: ExactKeyIndex) {
        switch node {
        case .literal(let value):
            self = .fixed(FlagDefinitions.outcome(of: value, variants: variants))
        case .conditional(let arguments):
            var branches: [Branch] = []
            var index = 0
            while index < arguments.count - 1 {
                branches.append(
                    Branch(
                        test: LogicTest(arguments[index]),
                        rule: VariantRule(arguments[index + 1], flagKey: flagKey, variants: variants)))
                index += 2
            }
            let otherwise =
                index < arguments.count
                ? VariantRule(arguments[index], flagKey: flagKey, variants: variants) : .fixed(.nullRule)
            self = branches.isEmpty ? otherwise : .conditional(branches, otherwise: otherwise)
        case .fractional(let plan) where plan.key == nil:
            var hash = MurmurHash3()
            hash.combine(utf8: flagKey)
            self = .fractional(
                FractionalOutcomes(
                    flagKeyHash: hash, plan: plan,
                    outcomes: plan.variants.map { FlagDefinitions.outcome(of: $0, variants: variants) }))
        default:
            self = .node(node)
        }
    }

    /// Which of the flag's results this rule serves for `context`. The context, the flag key and
    /// `$flagd.timestamp` are passed as they are, not gathered in a ``LogicEnvironment``: a
    /// struct that holds them is a copy, a retain per field.
    func outcome(_ context: EvaluationContext, _ flagKey: String, _ timestamp: Int64, _ variants: ExactKeyIndex)
        -> FlagDefinitions.Outcome
    {
        switch self {
        case .fixed(let outcome):
            return outcome
        case .conditional(let branches, let otherwise):
            do {
                // By index: each branch is borrowed in place, where `for in` copies (retains) it.
                for index in branches.indices where try branches[index].test.holds(context, flagKey, timestamp) {
                    return branches[index].rule.outcome(context, flagKey, timestamp, variants)
                }
            } catch {
                return FlagDefinitions.outcome(of: error)
            }
            return otherwise.outcome(context, flagKey, timestamp, variants)
        case .fractional(let fractional):
            // flagd's rule: no bucket (null) without a targeting key.
            let targetingKey = context.targetingKey
            guard !targetingKey.isEmpty else { return .nullRule }
            var hasher = fractional.flagKeyHash
            hasher.combine(utf8: targetingKey)
            guard let bucket = fractional.plan.bucket(of: hasher.finalize()) else { return .nullRule }
            return fractional.outcomes[bucket]
        case .node(let node):
            do {
                let env = LogicEnvironment(context, flagKey: flagKey, timestamp: timestamp)
                return FlagDefinitions.outcome(of: try node.evaluate(.root, env), variants: variants)
            } catch {
                return FlagDefinitions.outcome(of: error)
            }
        }
    }
}

extension LogicEnvironment {
    /// The general evaluator's environment for `context`: what a compiled rule builds only when
    /// it falls back to ``LogicNode/evaluate(_:_:)`` (its typed tests read the context in place,
    /// without the copies an environment holds).
    init(_ context: EvaluationContext, flagKey: String, timestamp: Int64) {
        self.init(
            attributes: context.attributes, targetingKey: context.targetingKey, flagKey: flagKey,
            timestamp: timestamp)
    }
}
