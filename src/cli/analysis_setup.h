// The analysis settings `rlprof analyse` and `rlprof summary` share: --assign, --compat and
// --rules turned into AnalysisOptions and a Classifier, with one error path.
#ifndef RLPROF_SRC_CLI_ANALYSIS_SETUP_H_
#define RLPROF_SRC_CLI_ANALYSIS_SETUP_H_

#include <string>

#include "src/analysis/analyse.h"
#include "src/analysis/classify.h"
#include "src/cli/command.h"

namespace rlprof::cli {

analysis::AnalysisOptions MakeAnalysisOptions(const std::string& assign, const std::string& compat);
// --step-marker: checks the regex and sets it; on a bad one prints "rlprof <command>: <why>"
// and returns false (usage error for the caller).
bool SetStepMarker(const std::string& pattern, const char* command, Io& io,
                   analysis::AnalysisOptions* opts);
// The default rule table, with the rules of `rules_file` (if any) in front. On a bad file it
// prints "rlprof <command>: <why>" and returns false (exit code 2 for the caller).
bool LoadClassifier(const std::string& rules_file, const char* command, Io& io,
                    analysis::Classifier* out);

}  // namespace rlprof::cli

#endif  // RLPROF_SRC_CLI_ANALYSIS_SETUP_H_
