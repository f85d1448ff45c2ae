#include "fairshare/config.h"

#include <re2/re2.h>

#include <algorithm>
#include <set>

namespace berth::fairshare {
namespace {

// Class order: percent descending, ties by name ascending.
void SortInClassOrder(std::vector<ClassShare>& classes) {
  std::sort(classes.begin(), classes.end(), [](const ClassShare& a, const ClassShare& b) {
    return a.percent != b.percent ? a.percent > b.percent : a.name < b.name;
  });
}

Status ValidateClasses(const std::vector<ClassShare>& classes) {
  if (classes.empty()) return Status::InvalidArgument("at least one class is needed");
  std::set<std::string_view> names;
  int64_t sum = 0;
  for (const ClassShare& c : classes) {
    if (c.name.empty()) return Status::InvalidArgument("a class name must not be empty");
    if (!names.insert(c.name).second)
      return Status::InvalidArgument("class '" + c.name + "' is listed twice");
    if (c.percent < 0)
      return Status::InvalidArgument("class '" + c.name + "' has a negative load percent (" +
                                     std::to_string(c.percent) + ")");
    if (c.percent > 1'000'000)  // keeps p * 100 and W * p far from overflow
      return Status::InvalidArgument("class '" + c.name + "' has a load percent over 1000000");
    sum += c.percent;
  }
  if (sum == 0) return Status::InvalidArgument("every class has a load percent of 0");
  return Status::Ok();
}

}  // namespace

std::vector<int64_t> RescalePercents(const std::vector<ClassShare>& classes) {
  int64_t sum = 0;
  for (const ClassShare& c : classes) sum += c.percent;
  std::vector<int64_t> percents(classes.size());
  int64_t others = 0;
  for (size_t i = 1; i < classes.size(); ++i) {
    percents[i] = sum == 100 ? classes[i].percent : classes[i].percent * 100 / sum;
    others += percents[i];
  }
  percents[0] = 100 - others;
  return percents;
}

Config::Config() {
  Status ok = SetClassLoadPercents({{"default", 100}});
  (void)ok;  // a constant, valid configuration
}

Status Config::CompileRules(const std::vector<RequestorRule>& rules,
                            const std::vector<ClassShare>& classes,
                            std::vector<CompiledRule>* out) const {
  std::vector<CompiledRule> compiled;
  for (size_t i = 0; i < rules.size(); ++i) {
    const RequestorRule& rule = rules[i];
    auto found = std::find_if(classes.begin(), classes.end(),
                              [&](const ClassShare& c) { return c.name == rule.class_name; });
    if (found == classes.end())
      return Status::InvalidArgument("requestor rule " + std::to_string(i) + " ('" +
                                     rule.pattern + "') names unknown class '" + rule.class_name +
                                     "'");
    RE2::Options options;
    options.set_log_errors(false);
    auto regex = std::make_shared<const RE2>(rule.pattern, options);
    if (!regex->ok())
      return Status::InvalidArgument("requestor pattern '" + rule.pattern +
                                     "' does not compile: " + regex->error());
    compiled.push_back({std::move(regex), static_cast<ClassIndex>(found - classes.begin())});
  }
  *out = std::move(compiled);
  return Status::Ok();
}

Status Config::SetClassLoadPercents(std::vector<ClassShare> classes) {
  BERTH_RETURN_IF_ERROR(ValidateClasses(classes));
  SortInClassOrder(classes);
  std::vector<CompiledRule> compiled;
  BERTH_RETURN_IF_ERROR(CompileRules(rules_, classes, &compiled));
  percents_ = RescalePercents(classes);
  classes_ = std::move(classes);
  compiled_ = std::move(compiled);
  ++generation_;
  return Status::Ok();
}

std::vector<ClassShare> Config::ClassLoadPercents() const { return classes_; }

Status Config::SetRequestorMap(std::vector<RequestorRule> rules) {
  std::vector<CompiledRule> compiled;
  BERTH_RETURN_IF_ERROR(CompileRules(rules, classes_, &compiled));
  rules_ = std::move(rules);
  compiled_ = std::move(compiled);
  ++generation_;
  return Status::Ok();
}

ClassIndex Config::ClassOf(std::string_view requestor) const {
  for (const CompiledRule& rule : compiled_)
    if (RE2::PartialMatch(requestor, *rule.regex)) return rule.class_index;
  return static_cast<ClassIndex>(classes_.size() - 1);
}

}  // namespace berth::fairshare
