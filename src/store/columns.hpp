#pragma once
// The fleet's list and label columns as both backends keep them: canonical JSON text, the same
// bytes the seed writes. Only the store turns them into values and back.

#include <string>

#include "aios/store.hpp"

namespace aios::store {

std::string names_text(const Names& names);
std::string labels_text(const Labels& labels);

// STORE_FAILURE for a column that is not a list of strings (an object of strings): whoever can
// write the database is not trusted with what the fleet decides on.
Names names_of(const std::string& text);
Labels labels_of(const std::string& text);

// A task's capability scope: nullopt for NULL or a damaged column, so one bad row is passed over
// by a claim rather than failing every claim that meets it; and back (NULL for nullopt).
std::optional<Names> scope_of(const std::string& text);
std::string scope_text(const std::optional<Names>& scope);

}  // namespace aios::store
