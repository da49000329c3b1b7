g++ -O2 -std=c++20 -Wall -Wextra -pthread -o handoff handoff.cpp -lhiredis
