/* SPDX-License-Identifier: Apache-2.0
 * The names of the builtins upstream SystemDS implements as DML scripts
 * (scripts/builtin/NAME.dml; shared/spec/UPSTREAM-BUILTINS.md, snapshot of
 * 2026-08), sorted (strcmp) for bsearch. resolve.c uses it to tell a call of
 * one that dml does not ship ("not supported") from a name no one defines
 * ("is undefined"). */
#ifndef DML_RUNTIME_UPSTREAM_DML_BUILTINS_H
#define DML_RUNTIME_UPSTREAM_DML_BUILTINS_H

static const char *const upstream_dml_builtins[] = {
    "WoE", "WoEApply", "abstain", "adasyn", "als", "alsCG", "alsDS", "alsPredict", "alsTopkPredict",
    "ampute", "apply_pipeline", "arima", "auc", "autoencoder_2layer", "bandit", "bivar",
    "components", "confusionMatrix", "cooccurrenceMatrix", "cor", "correctTypos",
    "correctTyposApply", "cox", "cspline", "csplineCG", "csplineDS", "cvlm", "dbscan",
    "dbscanApply", "decisionTree", "decisionTreePredict", "dedup", "deepWalk", "denialConstraints",
    "differenceStatistics", "discoverFD", "dist", "dmv", "ema", "executePipeline", "f1Score",
    "ffPredict", "ffTrain", "fit_pipeline", "fixInvalidLengths", "fixInvalidLengthsApply",
    "flattenQuantile", "frameSort", "frequencyEncode", "frequencyEncodeApply", "garch",
    "gaussianClassifier", "getAccuracy", "glm", "glmPredict", "glove", "gmm", "gmmPredict", "gnmf",
    "gridSearch", "hospitalResidencyMatch", "hyperband", "img_brightness",
    "img_brightness_linearized", "img_crop", "img_crop_linearized", "img_cutout",
    "img_cutout_linearized", "img_invert", "img_invert_linearized", "img_mirror",
    "img_mirror_linearized", "img_posterize", "img_posterize_linearized", "img_rotate",
    "img_rotate_linearized", "img_sample_pairing", "img_sample_pairing_linearized", "img_shear",
    "img_shear_linearized", "img_transform", "img_transform_linearized", "img_translate",
    "img_translate_linearized", "impurityMeasures", "imputeByFD", "imputeByFDApply", "imputeByKNN",
    "imputeByMean", "imputeByMeanApply", "imputeByMedian", "imputeByMedianApply", "imputeByMode",
    "imputeByModeApply", "incSliceLine", "independentSubnetTrain", "intersect", "km", "kmeans",
    "kmeansPredict", "knn", "knnGraph", "knnbf", "l2svm", "l2svmPredict", "lasso", "lenetPredict",
    "lenetTrain", "lm", "lmCG", "lmDS", "lmPredict", "lmPredictStats", "logSumExp", "mae", "mape",
    "matrixProfile", "mcc", "mdedup", "mice", "miceApply", "mse", "msmape", "msvm", "msvmPredict",
    "multiLogReg", "multiLogRegPredict", "na_locf", "naiveBayes", "naiveBayesPredict", "normalize",
    "normalizeApply", "nrmse", "outlier", "outlierByArima", "outlierByIQR", "outlierByIQRApply",
    "outlierBySd", "outlierBySdApply", "pageRank", "pca", "pcaInverse", "pcaTransform", "pnmf",
    "ppca", "psnr", "quantizeByCluster", "raGroupby", "raJoin", "raSelection", "randomForest",
    "randomForestPredict", "rmse", "scale", "scaleApply", "scaleMinMax", "scaleRobust",
    "scaleRobustApply", "selectByVarThresh", "ses", "setdiff", "shapExplainer", "sherlock",
    "sherlockPredict", "shortestPath", "skewness", "sliceLine", "sliceLineDebug",
    "sliceLineExtract", "slicefinder", "smape", "smote", "softmax", "split", "splitBalanced",
    "sqrtMatrix", "stableMarriage", "statsNA", "steplm", "stratstats", "symmetricDifference",
    "tSNE", "toOneHot", "tomeklink", "topk_cleaning", "underSampling", "union", "univar",
    "vectorToCsv", "wer", "winsorize", "winsorizeApply", "xdummy1", "xgboost", "xgboostPredict",
    "xgboostPredictClassification", "xgboostPredictRegression",
};

#endif
