"""advisor.report"""
