// lockwire-sim list | replay | explore: the race catalogue (sim/races) on the command line.
#pragma once

namespace lockwire::races {

int cli_list(int argc, char** argv);
int cli_replay(int argc, char** argv);
int cli_explore(int argc, char** argv);

}  // namespace lockwire::races
