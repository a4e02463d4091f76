#include <sinew/engine/version.hpp>

#include <iostream>

int main() {
    std::cout << "sinew " << sinew::version_string() << '\n';
    return 0;
}
