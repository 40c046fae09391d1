// Fuzz targets over JSON documents: canonical JSON, the execution envelope and Online Task
// projection, the executor's request, and the rebind request.
#include "aios/canonical.hpp"
#include "aios/envelope.hpp"
#include "aios/executor.hpp"
#include "aios/rebind.hpp"
#include "fuzz_targets.hpp"
#include "support.hpp"

namespace aios::fuzz {

int canonical_json(const std::uint8_t* data, std::size_t size) {
  const auto text = text_of(data, size);
  // The text helpers take any bytes.
  refusal_ok([&] { (void)sanitize_text(text); });
  refusal_ok([&] { (void)bounded_text(text, 64); });
  const auto value = json_of(text);
  if (!value) return 0;
  refusal_ok([&] {
    const std::string once = aios::canonical_json(*value);
    // Canonical form is a fixed point: parsing it back and canonicalising again changes nothing,
    // and the digest is the hash of exactly those bytes.
    const auto again = json_of(once);
    require(again.has_value(), "canonical JSON does not parse back");
    require(aios::canonical_json(*again) == once, "canonical JSON is not a fixed point");
    require(digest(*value) == sha256_hex(once), "digest is not sha256 of the canonical form");
  });
  return 0;
}

int envelope(const std::uint8_t* data, std::size_t size) {
  const auto value = json_of(text_of(data, size));
  if (!value) return 0;
  refusal_ok([&] { (void)validate_execution_envelope(*value); });
  if (!value->is_object()) return 0;
  refusal_ok([&] {
    const auto binding = GovernedBinding::from_mapping(value->value("binding", *value));
    const auto execution = value->value("execution", nlohmann::json::object());
    refusal_ok([&] {
      const auto projected = project_execution_envelope(
          binding, execution, value->value("required_capabilities", nlohmann::json::array()));
      // What projection returns must validate as is, with the digest it carries.
      const auto valid = validate_execution_envelope(projected);
      require(valid.at("execution_digest") == execution_digest_of(projected),
              "a projected envelope's digest does not match its content");
    });
    refusal_ok([&] { (void)project_online_task(binding, *value, execution); });
  });
  return 0;
}

int runtime_request(const std::uint8_t* data, std::size_t size) {
  const auto value = json_of(text_of(data, size));
  if (!value) return 0;
  refusal_ok([&] {
    const auto request = executor::validate_request(*value);
    (void)executor::render_prompt(request.at("payload"));
  });
  return 0;
}

int rebind_request(const std::uint8_t* data, std::size_t size) {
  const auto value = json_of(text_of(data, size));
  if (!value) return 0;
  refusal_ok([&] { (void)ExecutionRebindRequest::from_mapping(*value); });
  return 0;
}

}  // namespace aios::fuzz
