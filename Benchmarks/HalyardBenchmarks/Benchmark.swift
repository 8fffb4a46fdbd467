import Halyard

@main
struct HalyardBenchmark {
    static func main() {
        print("halyard-bench: not written yet")
    }
}
