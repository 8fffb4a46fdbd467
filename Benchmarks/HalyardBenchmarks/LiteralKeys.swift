// Generated from `Workload.literalKeys` (one call site per key, each passing its key as a
// string literal, as application code does); regenerate when the keys change:
// the design checks at start that `literalSwitchKeys` equals `Workload.literalKeys`.

#if os(Linux)
    import Halyard

    /// The keys of the call sites below, in the same order.
    let literalSwitchKeys: [String] = [
        "checkout.new-flow", "banner.text", "search.v2", "cart.enabled",
        "profile.dark-mode", "onboarding.skip", "pricing.tiers", "feed.ranking",
        "checkout.express-pay", "banner.color", "search.typeahead", "cart.save-later",
        "profile.avatar-upload", "onboarding.tour", "pricing.discount", "feed.autoplay",
        "checkout.apple-pay", "banner.dismissible", "search.filters", "cart.upsell",
        "profile.bio-limit", "onboarding.steps", "pricing.annual", "feed.infinite-scroll",
        "checkout.gift-wrap", "banner.position", "search.spellcheck", "cart.badge",
        "profile.pronouns", "onboarding.video", "pricing.trial-days", "feed.stories",
        "checkout.address-v3", "banner.countdown", "search.recent", "cart.coupon-field",
        "profile.export", "onboarding.email", "pricing.currency", "feed.ads-density",
        "checkout.split-pay", "banner.locale-fix", "search.voice", "cart.min-order",
        "profile.privacy-v2", "onboarding.push", "pricing.promo-code", "feed.reactions",
        "checkout.tip-jar", "banner.a11y", "search.semantic", "cart.recommend",
        "profile.share", "onboarding.locale", "pricing.bundles", "feed.share-sheet",
        "checkout.retry-3ds", "banner.rollout", "search.boost-new", "cart.quick-add",
        "profile.delete-v2", "onboarding.consent", "pricing.vat", "feed.comments-v2",
    ]

    /// `flags.bool(<literal>, default: false)` for key `i`: 64 call sites, each with its key as a
    /// literal (two constant words, no reference counting), reached through one `switch`.
    @inline(__always)
    func literalBool(_ flags: FlagClient, _ i: Int) -> Bool {
        switch i {
        case 0: return flags.bool("checkout.new-flow", default: false)
        case 1: return flags.bool("banner.text", default: false)
        case 2: return flags.bool("search.v2", default: false)
        case 3: return flags.bool("cart.enabled", default: false)
        case 4: return flags.bool("profile.dark-mode", default: false)
        case 5: return flags.bool("onboarding.skip", default: false)
        case 6: return flags.bool("pricing.tiers", default: false)
        case 7: return flags.bool("feed.ranking", default: false)
        case 8: return flags.bool("checkout.express-pay", default: false)
        case 9: return flags.bool("banner.color", default: false)
        case 10: return flags.bool("search.typeahead", default: false)
        case 11: return flags.bool("cart.save-later", default: false)
        case 12: return flags.bool("profile.avatar-upload", default: false)
        case 13: return flags.bool("onboarding.tour", default: false)
        case 14: return flags.bool("pricing.discount", default: false)
        case 15: return flags.bool("feed.autoplay", default: false)
        case 16: return flags.bool("checkout.apple-pay", default: false)
        case 17: return flags.bool("banner.dismissible", default: false)
        case 18: return flags.bool("search.filters", default: false)
        case 19: return flags.bool("cart.upsell", default: false)
        case 20: return flags.bool("profile.bio-limit", default: false)
        case 21: return flags.bool("onboarding.steps", default: false)
        case 22: return flags.bool("pricing.annual", default: false)
        case 23: return flags.bool("feed.infinite-scroll", default: false)
        case 24: return flags.bool("checkout.gift-wrap", default: false)
        case 25: return flags.bool("banner.position", default: false)
        case 26: return flags.bool("search.spellcheck", default: false)
        case 27: return flags.bool("cart.badge", default: false)
        case 28: return flags.bool("profile.pronouns", default: false)
        case 29: return flags.bool("onboarding.video", default: false)
        case 30: return flags.bool("pricing.trial-days", default: false)
        case 31: return flags.bool("feed.stories", default: false)
        case 32: return flags.bool("checkout.address-v3", default: false)
        case 33: return flags.bool("banner.countdown", default: false)
        case 34: return flags.bool("search.recent", default: false)
        case 35: return flags.bool("cart.coupon-field", default: false)
        case 36: return flags.bool("profile.export", default: false)
        case 37: return flags.bool("onboarding.email", default: false)
        case 38: return flags.bool("pricing.currency", default: false)
        case 39: return flags.bool("feed.ads-density", default: false)
        case 40: return flags.bool("checkout.split-pay", default: false)
        case 41: return flags.bool("banner.locale-fix", default: false)
        case 42: return flags.bool("search.voice", default: false)
        case 43: return flags.bool("cart.min-order", default: false)
        case 44: return flags.bool("profile.privacy-v2", default: false)
        case 45: return flags.bool("onboarding.push", default: false)
        case 46: return flags.bool("pricing.promo-code", default: false)
        case 47: return flags.bool("feed.reactions", default: false)
        case 48: return flags.bool("checkout.tip-jar", default: false)
        case 49: return flags.bool("banner.a11y", default: false)
        case 50: return flags.bool("search.semantic", default: false)
        case 51: return flags.bool("cart.recommend", default: false)
        case 52: return flags.bool("profile.share", default: false)
        case 53: return flags.bool("onboarding.locale", default: false)
        case 54: return flags.bool("pricing.bundles", default: false)
        case 55: return flags.bool("feed.share-sheet", default: false)
        case 56: return flags.bool("checkout.retry-3ds", default: false)
        case 57: return flags.bool("banner.rollout", default: false)
        case 58: return flags.bool("search.boost-new", default: false)
        case 59: return flags.bool("cart.quick-add", default: false)
        case 60: return flags.bool("profile.delete-v2", default: false)
        case 61: return flags.bool("onboarding.consent", default: false)
        case 62: return flags.bool("pricing.vat", default: false)
        default: return flags.bool("feed.comments-v2", default: false)
        }
    }
#endif
