# Which KDE Frameworks to build against, for the plugins (Clients/dolphin) and the bench's probe
# (Benchmarks/filemanagers/probe/dolphin) alike: KF6/Qt 6 when KF6's KIO is found (Debian 13,
# Plasma 6), else KF5/Qt 5 (Debian 12). -DQT_MAJOR_VERSION=5 or 6 forces either (ECM's
# KDEInstallDirs reads the same variable). Dolphin 25 loads only kf6/ plugins, Dolphin 22 only
# kf5/ ones: build against the Dolphin that will load them. Writes the choice to
# ${CMAKE_BINARY_DIR}/qt-major for the Makefile's install targets.
set(QT_MAJOR_VERSION "" CACHE STRING "Qt major version to build against: 6 (KF6) or 5 (KF5); empty: 6 when KF6 KIO is found, else 5")
if(NOT QT_MAJOR_VERSION)
    find_package(KF6KIO 6.0 QUIET NO_MODULE)
    if(KF6KIO_FOUND)
        set(QT_MAJOR_VERSION 6)
    else()
        set(QT_MAJOR_VERSION 5)
    endif()
elseif(NOT QT_MAJOR_VERSION MATCHES "^[56]$")
    message(FATAL_ERROR "QT_MAJOR_VERSION is ${QT_MAJOR_VERSION}: 5 (KF5) or 6 (KF6)")
endif()
file(WRITE "${CMAKE_BINARY_DIR}/qt-major" "${QT_MAJOR_VERSION}\n")
