// What this isolate serves. A dart_frog route is a top-level onRequest
// function and the custom entrypoint a top-level run function: neither is
// handed fairbench's Config, so they read it here.
import 'fairbench.dart';

Config? _served;

/// The config bin/server.dart set for this isolate, or, behind a server the
/// dart_frog CLI generated, the one the environment describes.
Config get served => _served ??= Config.fromEnvironment();

set served(Config config) => _served = config;
