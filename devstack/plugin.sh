#!/bin/bash
# DevStack plugin entry point for cyborg: DevStack sources this file with
# the mode and phase ("stack install", "unstack"...); the work is done by
# the functions of devstack/lib/cyborg.

source $CYBORG_DIR/devstack/lib/cyborg

if is_service_enabled cyborg-api cyborg-cond cyborg-agent; then
    case $1 in
        stack)
            case $2 in
                install)
                    echo_summary "Installing cyborg"
                    install_cyborg
                    ;;
                post-config)
                    echo_summary "Configuring cyborg"
                    configure_cyborg
                    create_cyborg_accounts
                    ;;
                extra)
                    echo_summary "Initializing and starting cyborg"
                    init_cyborg
                    start_cyborg
                    ;;
                test-config)
                    if is_service_enabled tempest; then
                        echo_summary "Configuring tempest for cyborg"
                        configure_cyborg_tempest
                    fi
                    ;;
            esac
            ;;
        unstack)
            stop_cyborg
            ;;
        clean)
            cleanup_cyborg
            ;;
    esac
fi
