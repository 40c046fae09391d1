#include "compact_map/symbols.hpp"

#include <cctype>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <utility>

namespace aios::compact_map {
namespace {

// Longer lines are generated or minified code, and bounding them bounds std::regex's
// recursion.
constexpr std::size_t kMaxLineBytes = 400;

enum class Where {
  anywhere,       // any line
  top_or_member,  // column 0 outside every scope, or a class scope's member indentation
  member,         // only a class scope's member indentation
};

enum class Opens {
  nothing,
  class_scope,     // functions inside are methods, qualified by the scope's name
  module_scope,    // functions inside stay functions, qualified by the scope's name
  function_scope,  // definitions inside are local and skipped (Python's nested defs)
};

struct Rule {
  std::regex pattern;
  std::string_view kind;  // "" takes the kind from kind_group; "-" opens a scope silently
  std::size_t name_group = 1;
  std::size_t kind_group = 0;
  std::size_t qualifier_group = 0;  // Go's receiver type
  Where where = Where::anywhere;
  Opens opens = Opens::nothing;
};

Rule rule(const char* pattern, std::string_view kind, Where where = Where::anywhere,
          Opens opens = Opens::nothing) {
  return Rule{std::regex(pattern, std::regex::ECMAScript | std::regex::optimize),
              kind,
              1,
              0,
              0,
              where,
              opens};
}

Rule with_groups(Rule r, std::size_t name_group, std::size_t kind_group,
                 std::size_t qualifier_group = 0) {
  r.name_group = name_group;
  r.kind_group = kind_group;
  r.qualifier_group = qualifier_group;
  return r;
}

bool is_function_kind(std::string_view kind) {
  return kind == "function" || kind == "method";
}

const std::vector<Rule>& python_rules() {
  static const std::vector<Rule> rules = {
      rule(R"(^\s*class\s+([A-Za-z_]\w*))", "class", Where::anywhere, Opens::class_scope),
      rule(R"(^\s*(?:async\s+)?def\s+([A-Za-z_]\w*))", "function", Where::anywhere,
           Opens::function_scope),
  };
  return rules;
}

const std::vector<Rule>& c_family_rules() {
  static const std::vector<Rule> rules = {
      rule(R"(^\s*#\s*define\s+([A-Za-z_]\w*))", "macro"),
      rule(R"(^\s*namespace\s+([A-Za-z_][\w:]*)\s*\{?\s*$)", "-"),
      with_groups(
          rule(
              R"(^\s*(?:template\s*<[^;]*>\s*)?(class|struct|union)\s+(?:\[\[[^\]]*\]\]\s*)?(?:[A-Z][A-Z0-9_]*\s+)?([A-Za-z_]\w*)\b[^;{]*(?:\{.*)?$)",
              "", Where::anywhere, Opens::class_scope),
          2, 1),
      rule(R"(^\s*enum\s+(?:class\s+|struct\s+)?([A-Za-z_]\w*)[^;{]*(?:\{.*)?$)", "enum"),
      rule(R"(^(?:[\w:]+(?:<[^;()]*>)?[\s*&]+)+([A-Za-z_~]\w*(?:::~?[A-Za-z_]\w*)*)\s*\()",
           "function", Where::top_or_member),
      rule(
          R"(^\s*(?:(?:virtual|static|explicit|inline|constexpr|consteval|friend)\s+)*(?:[\w:]+(?:<[^;()]*>)?[\s*&]+)*(~?[A-Za-z_]\w*)\s*\()",
          "function", Where::member),
  };
  return rules;
}

const std::vector<Rule>& script_rules() {
  static const std::vector<Rule> rules = {
      rule(
          R"(^\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?class\s+([A-Za-z_$][\w$]*))",
          "class", Where::anywhere, Opens::class_scope),
      rule(R"(^\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?interface\s+([A-Za-z_$][\w$]*))",
           "interface"),
      rule(R"(^\s*(?:export\s+)?(?:declare\s+)?type\s+([A-Za-z_$][\w$]*)\s*(?:<[^>]*>)?\s*=)",
           "type"),
      rule(R"(^\s*(?:export\s+)?(?:declare\s+)?(?:const\s+)?enum\s+([A-Za-z_$][\w$]*))", "enum"),
      rule(
          R"(^\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*))",
          "function", Where::top_or_member),
      rule(
          R"(^\s*(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*(?::[^=]+)?=>|[A-Za-z_$][\w$]*\s*=>))",
          "function", Where::top_or_member),
      rule(
          R"(^\s*(?:(?:public|private|protected|static|readonly|override)\s+)*([A-Za-z_$#][\w$]*)\s*(?::[^=]+)?=\s*(?:async\s+)?(?:\([^)]*\)|[A-Za-z_$][\w$]*)\s*(?::[^=]+)?=>)",
          "function", Where::member),
      rule(
          R"(^\s*(?:(?:public|private|protected|static|async|readonly|abstract|override|get|set)\s+)*\*?\s*([A-Za-z_$#][\w$]*)\s*(?:<[^>]*>)?\s*\([^;]*$)",
          "function", Where::member),
  };
  return rules;
}

const std::vector<Rule>& go_rules() {
  static const std::vector<Rule> rules = {
      with_groups(
          rule(
              R"(^func\s+\(\s*(?:\w+\s+)?\*?\s*([A-Za-z_]\w*)(?:\[[^\]]*\])?\s*\)\s*([A-Za-z_]\w*))",
              "method"),
          2, 0, 1),
      rule(R"(^func\s+([A-Za-z_]\w*))", "function"),
      with_groups(rule(R"(^type\s+([A-Za-z_]\w*)(?:\[[^\]]*\])?\s+(struct|interface)\b)", ""), 1,
                  2),
      rule(R"(^type\s+([A-Za-z_]\w*)\s)", "type"),
  };
  return rules;
}

const std::vector<Rule>& rust_rules() {
  static const std::vector<Rule> rules = {
      rule(
          R"(^\s*(?:pub(?:\([^)]*\))?\s+)?(?:default\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+"[^"]*"\s+)?fn\s+([A-Za-z_]\w*))",
          "function", Where::top_or_member),
      with_groups(
          rule(
              R"(^\s*(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+)?(struct|enum|trait|union|type)\s+([A-Za-z_]\w*))",
              "", Where::anywhere, Opens::class_scope),
          2, 1),
      rule(R"(^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_]\w*)\s*\{)", "mod", Where::anywhere,
           Opens::module_scope),
      rule(
          R"(^\s*(?:unsafe\s+)?impl\b(?:\s*<[^{]*?>)?\s+(?:[\w:]+(?:<[^{]*?>)?\s+for\s+)?(?:[\w]+::)*([A-Za-z_]\w*))",
          "-", Where::anywhere, Opens::class_scope),
  };
  return rules;
}

const std::vector<Rule>& java_rules() {
  static const std::vector<Rule> rules = {
      with_groups(
          rule(
              R"(^\s*(?:@\w+\s+)*(?:(?:public|protected|private|static|abstract|final|sealed|non-sealed|strictfp)\s+)*(class|interface|enum|record|@interface)\s+([A-Za-z_$][\w$]*))",
              "", Where::anywhere, Opens::class_scope),
          2, 1),
      rule(
          R"(^\s*(?:@\w+\s+)*(?:(?:public|protected|private|static|abstract|final|synchronized|native|default|strictfp)\s+)*(?:<[^>]*>\s+)?(?:[\w.$]+(?:<[^;()]*>)?(?:\[\])*\s+)?([A-Za-z_$][\w$]*)\s*\()",
          "function", Where::member),
  };
  return rules;
}

const std::vector<Rule>* rules_for(std::string_view language) {
  if (language == "python") return &python_rules();
  if (language == "c" || language == "cpp") return &c_family_rules();
  if (language == "javascript" || language == "typescript") return &script_rules();
  if (language == "go") return &go_rules();
  if (language == "rust") return &rust_rules();
  if (language == "java") return &java_rules();
  return nullptr;
}

// Words that look like a name before "(" but start a statement or an expression.
const std::set<std::string, std::less<>> kNotNames = {
    "if",           "for",  "while",  "switch",  "catch",    "return",  "sizeof",        "else",
    "do",           "new",  "delete", "throw",   "case",     "typeof",  "await",         "yield",
    "super",        "this", "using",  "typedef", "decltype", "alignof", "static_assert", "assert",
    "synchronized", "try",
};

std::string_view first_word(std::string_view trimmed) {
  std::size_t end = 0;
  while (end < trimmed.size() &&
         (std::isalnum(static_cast<unsigned char>(trimmed[end])) != 0 || trimmed[end] == '_')) {
    ++end;
  }
  return trimmed.substr(0, end);
}

bool all_caps(std::string_view name) {
  bool letter = false;
  for (const char c : name) {
    if (c >= 'a' && c <= 'z') return false;
    letter = letter || (c >= 'A' && c <= 'Z');
  }
  return letter;
}

struct Scope {
  std::size_t indent;
  std::string name;
  Opens kind;
  std::optional<std::size_t> member_indent;
};

class Scanner {
 public:
  Scanner(const SourceFile& file, const std::vector<Rule>& rules, std::size_t max_symbols)
      : file_(file), rules_(rules), max_symbols_(max_symbols) {}

  std::vector<Symbol> run() && {
    std::size_t number = 0;
    std::size_t start = 0;
    const std::string_view text = file_.content;
    while (start <= text.size() && symbols_.size() < max_symbols_) {
      std::size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      ++number;
      std::string_view line = text.substr(start, end - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.size() <= kMaxLineBytes) read_line(line, number);
      start = end + 1;
    }
    return std::move(symbols_);
  }

 private:
  void read_line(std::string_view line, std::size_t number) {
    std::size_t indent = 0;
    while (indent < line.size() && (line[indent] == ' ' || line[indent] == '\t')) ++indent;
    const std::string_view trimmed = line.substr(indent);
    if (trimmed.empty() || is_comment(trimmed)) return;
    // A lone "{" (Allman style) continues the definition above it; a label such as
    // "public:" is not where members are indented.
    const bool opener = trimmed == "{";
    const bool label = trimmed.back() == ':' && file_.language != "python";
    if (!opener) {
      while (!scopes_.empty() && indent <= scopes_.back().indent) scopes_.pop_back();
    }
    if (!scopes_.empty() && !opener && !label && !scopes_.back().member_indent) {
      scopes_.back().member_indent = indent;
    }
    if (opener || label) return;

    std::match_results<std::string_view::const_iterator> match;
    for (const Rule& rule : rules_) {
      if (!applies(rule.where, indent)) continue;
      if (!std::regex_search(line.begin(), line.end(), match, rule.pattern)) continue;
      if (is_function_kind(rule.kind) && kNotNames.contains(first_word(trimmed))) return;
      record(rule, match, indent, number);
      return;
    }
  }

  bool is_comment(std::string_view trimmed) const {
    if (file_.language == "python") return trimmed.front() == '#';
    return trimmed.starts_with("//") || trimmed.starts_with("/*") || trimmed.front() == '*';
  }

  bool in_class() const { return !scopes_.empty() && scopes_.back().kind != Opens::function_scope; }

  bool applies(Where where, std::size_t indent) const {
    switch (where) {
      case Where::anywhere:
        return true;
      case Where::top_or_member:
        return (scopes_.empty() && indent == 0) || at_member_indent(indent);
      case Where::member:
        return scopes_.empty()
                   ? false
                   : scopes_.back().kind == Opens::class_scope && at_member_indent(indent);
    }
    return false;
  }

  bool at_member_indent(std::size_t indent) const {
    return in_class() && scopes_.back().member_indent == indent;
  }

  void record(const Rule& rule, const std::match_results<std::string_view::const_iterator>& match,
              std::size_t indent, std::size_t number) {
    std::string name = match[rule.name_group].str();
    std::string kind(rule.kind);
    if (rule.kind_group != 0) kind = match[rule.kind_group].str();
    if (kind == "@interface") kind = "annotation";
    const bool nested_in_function =
        !scopes_.empty() && scopes_.back().kind == Opens::function_scope;
    const bool is_function = is_function_kind(kind);
    if (is_function && (kNotNames.contains(name) || all_caps(name))) return;
    if (rule.opens != Opens::nothing) scopes_.push_back({indent, name, rule.opens, std::nullopt});
    if (nested_in_function || kind == "-") return;

    if (rule.qualifier_group != 0) {
      name = match[rule.qualifier_group].str() + "." + name;
    } else if (scopes_.size() > (rule.opens != Opens::nothing ? 1U : 0U)) {
      const Scope& outer = scopes_[scopes_.size() - (rule.opens != Opens::nothing ? 2 : 1)];
      if (outer.kind == Opens::class_scope && is_function) kind = "method";
      name = outer.name + "." + name;
    }
    symbols_.push_back(
        Symbol{std::move(name), std::move(kind), file_.language, file_.path, number});
  }

  const SourceFile& file_;
  const std::vector<Rule>& rules_;
  std::size_t max_symbols_;
  std::vector<Scope> scopes_;
  std::vector<Symbol> symbols_;
};

}  // namespace

std::vector<Symbol> scan_symbols(const SourceFile& file, std::size_t max_symbols) {
  const std::vector<Rule>* rules = rules_for(file.language);
  if (rules == nullptr) return {};
  return Scanner(file, *rules, max_symbols).run();
}

}  // namespace aios::compact_map
