#include "src/cli/cli.h"

int main(int argc, char** argv) { return rlprof::cli::RunCli(argc, argv); }
