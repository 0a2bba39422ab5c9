#include <cstdio>
int main() { std::puts("popper: engine under construction"); return 0; }
