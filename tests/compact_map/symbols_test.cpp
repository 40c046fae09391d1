// The per-language symbol scanner: each language's definitions with kinds and line numbers.
#include "compact_map/symbols.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace aios::compact_map {
namespace {

// "kind name line" for each symbol, in order.
std::vector<std::string> scan(const std::string& path, const std::string& language,
                              const std::string& content) {
  const SourceFile file{path, language, content, 1, {}};
  std::vector<std::string> out;
  for (const Symbol& s : scan_symbols(file, 200)) {
    EXPECT_EQ(s.path, path);
    EXPECT_EQ(s.language, language);
    out.push_back(s.kind + " " + s.name + " " + std::to_string(s.line));
  }
  return out;
}

using Lines = std::vector<std::string>;

// Given Python with classes, methods, nested helpers and comments, we should list the class
// and module-level definitions, qualify methods and skip what is local or commented out.
TEST(CompactMapSymbols, Python) {
  EXPECT_EQ(scan("app/router.py", "python",
                 "import os\n"
                 "# def commented_out():\n"
                 "class ModelRouter(Base):\n"
                 "    \"\"\"Routes.\"\"\"\n"
                 "    def select_model(self):\n"
                 "        def local_helper():\n"
                 "            return 1\n"
                 "        return local_helper()\n"
                 "\n"
                 "    async def fallback(self):\n"
                 "        pass\n"
                 "\n"
                 "    class Inner:\n"
                 "        pass\n"
                 "\n"
                 "@decorator\n"
                 "def record_cost(trace_id):\n"
                 "    return trace_id\n"),
            (Lines{"class ModelRouter 3", "method ModelRouter.select_model 5",
                   "method ModelRouter.fallback 10", "class ModelRouter.Inner 13",
                   "function record_cost 17"}));
}

// Given C++ in Google style, we should list namespaced free functions, out-of-line method
// bodies, classes with their declared methods, enums and macros, and skip calls, control flow
// and forward declarations.
TEST(CompactMapSymbols, Cpp) {
  EXPECT_EQ(
      scan("src/fleet/scheduler.hpp", "cpp",
           "#pragma once\n"
           "#define AIOS_SLOTS 4\n"
           "namespace aios {\n"
           "class Forward;\n"
           "// class Commented {\n"
           "class Scheduler : public Base {\n"
           " public:\n"
           "  explicit Scheduler(int slots);\n"
           "  std::vector<Task> claim_next(const Worker& worker) const;\n"
           "  int capacity_ = 0;\n"
           "};\n"
           "enum class Fairness : int { kStrict };\n"
           "std::string select_profile(const Signals& signals);\n"
           "}  // namespace aios\n"),
      (Lines{"macro AIOS_SLOTS 2", "class Scheduler 6", "method Scheduler.Scheduler 8",
             "method Scheduler.claim_next 9", "enum Fairness 12", "function select_profile 13"}));
  EXPECT_EQ(scan("src/fleet/scheduler.cpp", "cpp",
                 "namespace aios {\n"
                 "namespace {\n"
                 "bool fits(int a) { return a > 0; }\n"
                 "}  // namespace\n"
                 "std::vector<Task> Scheduler::claim_next(const Worker& worker) const {\n"
                 "  if (fits(1)) {\n"
                 "    return heartbeat(worker);\n"
                 "  }\n"
                 "  struct Local {\n"
                 "    int x;\n"
                 "  };\n"
                 "}\n"
                 "static void* allocate_slot(size_t n)\n"
                 "{\n"
                 "}\n"
                 "TEST(Scheduler, Claims) {\n"
                 "}\n"
                 "}  // namespace aios\n"),
            (Lines{"function fits 3", "function Scheduler::claim_next 5", "struct Local 9",
                   "function allocate_slot 13"}));
}

// Given C, we should list structs, functions and macros.
TEST(CompactMapSymbols, C) {
  EXPECT_EQ(scan("lib/queue.c", "c",
                 "#include <stdio.h>\n"
                 "struct queue {\n"
                 "  int size;\n"
                 "};\n"
                 "int queue_push(struct queue *q, int v)\n"
                 "{\n"
                 "  return q->size + v;\n"
                 "}\n"),
            (Lines{"struct queue 2", "function queue_push 5"}));
}

// Given TypeScript, we should list classes with their methods and arrow properties,
// functions, arrow constants, interfaces, types and enums, and skip statements in bodies.
TEST(CompactMapSymbols, TypeScript) {
  EXPECT_EQ(scan("web/src/router.ts", "typescript",
                 "import { x } from './x';\n"
                 "export interface ProviderConfig {\n"
                 "  name: string;\n"
                 "}\n"
                 "export type Budget = { tokens: number };\n"
                 "export enum Route { Primary }\n"
                 "export class ModelRouter extends Base {\n"
                 "  private readonly table: Map<string, string>;\n"
                 "  constructor(private config: ProviderConfig) {\n"
                 "    super();\n"
                 "    if (config) {\n"
                 "      this.select(config);\n"
                 "    }\n"
                 "  }\n"
                 "  async selectModel(tenant: string): Promise<string> {\n"
                 "    return tenant;\n"
                 "  }\n"
                 "  onFallback = (reason: string) => {\n"
                 "  };\n"
                 "}\n"
                 "export async function recordCost(traceId: string) {\n"
                 "  return traceId;\n"
                 "}\n"
                 "export const pinVersion = (v: string): string => v;\n"
                 "const notAFunction = 42;\n"),
            (Lines{"interface ProviderConfig 2", "type Budget 5", "enum Route 6",
                   "class ModelRouter 7", "method ModelRouter.constructor 9",
                   "method ModelRouter.selectModel 15", "method ModelRouter.onFallback 18",
                   "function recordCost 21", "function pinVersion 24"}));
}

// Given JavaScript, the same rules apply.
TEST(CompactMapSymbols, JavaScript) {
  EXPECT_EQ(scan("web/queue.js", "javascript",
                 "function dispatch(task) {\n"
                 "  return task;\n"
                 "}\n"
                 "class Queue {\n"
                 "  push(item) {\n"
                 "    for (const x of item) {}\n"
                 "  }\n"
                 "}\n"
                 "module.exports = { dispatch };\n"),
            (Lines{"function dispatch 1", "class Queue 4", "method Queue.push 5"}));
}

// Given Go, we should list functions, methods qualified by their receiver, structs,
// interfaces and other types.
TEST(CompactMapSymbols, Go) {
  EXPECT_EQ(scan("pkg/fleet/lease.go", "go",
                 "package fleet\n"
                 "type Lease struct {\n"
                 "\tID string\n"
                 "}\n"
                 "type Renewer interface {\n"
                 "\tRenew() error\n"
                 "}\n"
                 "type Slot int\n"
                 "func NewLease(id string) *Lease {\n"
                 "\treturn &Lease{ID: id}\n"
                 "}\n"
                 "func (l *Lease) Heartbeat() error {\n"
                 "\treturn nil\n"
                 "}\n"
                 "func (Queue[T]) Len() int { return 0 }\n"),
            (Lines{"struct Lease 2", "interface Renewer 5", "type Slot 8", "function NewLease 9",
                   "method Lease.Heartbeat 12", "method Queue.Len 15"}));
}

// Given Rust, we should list items, methods inside impl blocks (qualified by the type) and
// functions of a module (qualified by it).
TEST(CompactMapSymbols, Rust) {
  EXPECT_EQ(scan("src/budget.rs", "rust",
                 "pub struct Budget {\n"
                 "    tokens: u64,\n"
                 "}\n"
                 "pub trait Meter {\n"
                 "    fn charge(&mut self, n: u64);\n"
                 "}\n"
                 "impl Meter for Budget {\n"
                 "    fn charge(&mut self, n: u64) {\n"
                 "        let inner = |x: u64| x;\n"
                 "    }\n"
                 "}\n"
                 "impl<T> Budget {\n"
                 "    pub async fn remaining(&self) -> u64 {\n"
                 "        self.tokens\n"
                 "    }\n"
                 "}\n"
                 "pub(crate) fn record_usage() {}\n"
                 "mod tests {\n"
                 "    fn it_counts() {}\n"
                 "}\n"),
            (Lines{"struct Budget 1", "trait Meter 4", "method Meter.charge 5",
                   "method Budget.charge 8", "method Budget.remaining 13",
                   "function record_usage 17", "mod tests 18", "function tests.it_counts 19"}));
}

// Given Java, we should list classes, interfaces, enums and records with their methods and
// constructors, and skip fields and statements.
TEST(CompactMapSymbols, Java) {
  EXPECT_EQ(
      scan("src/main/java/aios/Dispatcher.java", "java",
           "package aios;\n"
           "@Service\n"
           "public final class Dispatcher {\n"
           "    private final Queue queue = new Queue();\n"
           "    public Dispatcher(Queue queue) {\n"
           "        this.queue = queue;\n"
           "    }\n"
           "    @Override\n"
           "    public synchronized List<Task> dispatch(String tenant) throws IOException {\n"
           "        if (tenant == null) {\n"
           "            return List.of();\n"
           "        }\n"
           "        return queue.take(tenant);\n"
           "    }\n"
           "}\n"
           "interface Idempotent {\n"
           "    String key();\n"
           "}\n"
           "record Attempt(int number) {}\n"),
      (Lines{"class Dispatcher 3", "method Dispatcher.Dispatcher 5", "method Dispatcher.dispatch 9",
             "interface Idempotent 16", "method Idempotent.key 17", "record Attempt 19"}));
}

// Given more definitions than the cap, or an over-long line, we should stop at the cap and not
// read the long line.
TEST(CompactMapSymbols, CapAndLongLines) {
  std::string content = "def " + std::string(500, 'a') + "():\n    pass\n";
  for (int i = 0; i < 10; ++i) content += "def f" + std::to_string(i) + "():\n    pass\n";
  const SourceFile file{"m.py", "python", content, 1, {}};
  const std::vector<Symbol> symbols = scan_symbols(file, 3);
  ASSERT_EQ(symbols.size(), 3U);
  EXPECT_EQ(symbols[0].name, "f0");
  EXPECT_EQ(symbols[0].line, 3U);
}

}  // namespace
}  // namespace aios::compact_map
